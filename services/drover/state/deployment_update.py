"""UpdateDeployment: the deployment watcher's one atomic write.

One request, one etcd txn, with everything a watcher decision implies:

- the deployment's full new value, compared on the ``modify_index`` the
  caller sent (its optimistic-concurrency token: a deployment changed since,
  e.g. cancelled by a new job version, makes the call fail with CONFLICT and
  the watcher re-reads);
- ``stable_job_version``: the version record, and the job itself when that
  version is current, are marked stable (not a spec change, so the job's
  ``job_modify_index`` is kept, never re-derived from this txn);
- ``revert_job``: registered as the job's next version, only if the job's
  ``job_modify_index`` still equals ``revert_expected_job_modify_index``.
  When the user changed the job meanwhile the revert is *skipped*, not the
  whole write: the deployment's failure must be recorded either way, and the
  response then carries no ``reverted_job_version``. A revert of a service
  job with update strategies starts a new running deployment, as a register
  would (RegisterJob's own helper builds it);
- ``allocation_updates``: health set by an operator (SetAllocHealth), merged
  like UpdateAllocations, each allocation compared on its mod_revision;
- a group promoted by this update (``promoted`` false before, true now) has
  the canary flag of its canaries cleared in the same txn: a promoted canary
  is no longer a canary (Nomad's state store does the same on promotion);
- ``evaluations``: created with the write, compared absent.

Leader only: the call must carry the watcher leader's ``drover-fence``
(FAILED_PRECONDITION ``FENCE_REQUIRED`` without one, checked before anything
is read or written), and a deposed leader's write fails with FENCE_LOST. At most
``MAX_OBJECT_OPS`` objects per request (etcd's 128-op txn cap). Conflicts on
allocations (a client reported meanwhile) are retried after a cache sync;
a conflict on the deployment itself is the caller's to resolve.

Wiring (the state servicer is composed of RPC mixins): either mix
:class:`DeploymentUpdateRpc` into ``StateServicer``'s bases, or call
:func:`register` on the class once at import.
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2, evaluation_pb2, job_pb2
from drover.errors import Conflict, InvalidArgument, NotFound
from drover.state import codec
from drover.state.evaluations import validated_evals
from drover.state.objects import apply_allocation_update
from drover.state.reads import check_name
from drover.state.service_base import Base
from drover.state.store import Compare, Op, Put

RETRIES = 3

_ACTIVE = (deployment_pb2.DEPLOYMENT_STATUS_RUNNING, deployment_pb2.DEPLOYMENT_STATUS_PAUSED)


class DeploymentChanged(Conflict):
    """The deployment's modify_index is not the one the caller based its update on."""

    reason = "DEPLOYMENT_CHANGED"


class _Plan:
    """Compares and ops of one attempt, plus what the response reports."""

    def __init__(self) -> None:
        self.compares: list[Compare] = []
        self.ops: list[Op] = []
        self.reverted: int | None = None

    def put(self, key: bytes, mod: int, msg: Any) -> None:
        self.compares.append(Compare(key, "mod", mod))
        self.ops.append(Put(key, codec.encode(msg)))


def _validate(request: Any) -> tuple[deployment_pb2.Deployment, list[evaluation_pb2.Evaluation]]:
    d = deployment_pb2.Deployment()
    d.CopyFrom(request.deployment)
    check_name(d.id, "deployment.id")
    d.namespace = d.namespace or "default"
    check_name(d.namespace, "deployment.namespace")
    if d.modify_index == 0:
        raise InvalidArgument(
            "deployment.modify_index is required: the index the update is based on",
            metadata={"field": "deployment.modify_index"},
        )
    evs = validated_evals(request.evaluations)
    if request.HasField("revert_job") and request.revert_job.id not in ("", d.job_id):
        raise InvalidArgument(
            f"revert_job.id {request.revert_job.id!r} is not the deployment's job {d.job_id!r}",
            metadata={"field": "revert_job.id"},
        )
    for i, u in enumerate(request.allocation_updates):
        check_name(u.id, f"allocation_updates[{i}].id")
    return d, evs


class DeploymentUpdateRpc(Base):
    async def UpdateDeployment(self, request: Any, context: Any) -> Any:
        fence = self.require_fence(context, "UpdateDeployment")
        deployment, evs = _validate(request)
        for attempt in range(RETRIES):
            await self.cache.sync()
            plan = self._plan_update(request, deployment, evs)
            try:
                rev = await self.writer.commit(plan.compares, plan.ops, fence)
            except Conflict:  # an allocation or the deployment moved: re-plan
                if attempt == RETRIES - 1:
                    raise
                continue
            resp = state_pb2.UpdateDeploymentResponse(index=rev, eval_ids=[e.id for e in evs])
            if plan.reverted is not None:
                resp.reverted_job_version = plan.reverted
            return resp
        raise AssertionError("unreachable")

    def _plan_update(
        self, request: Any, src: deployment_pb2.Deployment, evs: list[evaluation_pb2.Evaluation]
    ) -> _Plan:
        plan = _Plan()
        ns = src.namespace
        table = self.cache.tables[codec.DEPLOYMENTS]
        entry = table.objects.get(f"{ns}/{src.id}")
        if entry is None:
            raise NotFound(f"deployment {src.id!r} not found in namespace {ns!r}")
        if entry[1] != src.modify_index:
            raise DeploymentChanged(
                f"deployment {src.id!r} is at index {entry[1]}, not {src.modify_index};"
                " re-read it and retry",
                metadata={"index": str(entry[1])},
            )
        d = deployment_pb2.Deployment()
        d.CopyFrom(src)
        d.modify_time.CopyFrom(self.now())
        d_key = self.keys.key(codec.DEPLOYMENTS, ns, d.id)
        plan.put(d_key, entry[1], d)
        if request.HasField("stable_job_version"):
            self._mark_stable(plan, ns, d.job_id, request.stable_job_version)
        if request.HasField("revert_job"):
            self._revert(plan, ns, d, request.revert_job, request.revert_expected_job_modify_index)
        before = table.decode_entry(entry)
        self._alloc_updates(plan, request.allocation_updates, newly_promoted(before, d))
        ev_table = self.cache.tables[codec.EVALUATIONS]
        for ev in evs:
            if ev_table.objects.get(f"{ev.namespace}/{ev.id}") is not None:
                raise InvalidArgument(f"evaluation {ev.id!r} already exists",
                                      metadata={"field": "evaluations"})
            if not ev.HasField("create_time"):
                ev.create_time.CopyFrom(self.now())
            ev.modify_time.CopyFrom(self.now())
            plan.put(self.keys.key(codec.EVALUATIONS, ev.namespace, ev.id), 0, ev)
        self.writer.check_size(len(plan.ops), "UpdateDeployment")
        return plan

    def _mark_stable(self, plan: _Plan, ns: str, job_id: str, version: int) -> None:
        versions = self.cache.tables[codec.JOB_VERSIONS]
        v_entry = versions.objects.get(f"{ns}/{job_id}/{version:020d}")
        if v_entry is None:
            raise NotFound(f"job {job_id!r} has no version {version} in namespace {ns!r}")
        record = versions.decode_entry(v_entry)  # indexes resolved: kept on re-encode
        if not record.stable:
            record.stable = True
            plan.put(self.keys.version_key(ns, job_id, version), v_entry[1], record)
        jobs = self.cache.tables[codec.JOBS]
        j_entry = jobs.objects.get(f"{ns}/{job_id}")
        if j_entry is not None:
            job = jobs.decode_entry(j_entry)
            if job.version == version and not job.stable:
                job.stable = True
                plan.put(self.keys.key(codec.JOBS, ns, job_id), j_entry[1], job)

    def _revert(self, plan: _Plan, ns: str, failed: deployment_pb2.Deployment,
                target: job_pb2.Job, expected_job_modify_index: int) -> None:
        jobs = self.cache.tables[codec.JOBS]
        j_entry = jobs.objects.get(f"{ns}/{failed.job_id}")
        if j_entry is None:
            return  # purged meanwhile: nothing to revert
        current = jobs.decode_entry(j_entry)
        if current.job_modify_index != expected_job_modify_index:
            return  # the user changed the job: their version wins (module doc)
        job = job_pb2.Job()
        job.CopyFrom(target)
        job.id, job.namespace = failed.job_id, ns
        job.version = current.version + 1
        job.stop, job.stable = False, False
        job.status = job_pb2.JOB_STATUS_PENDING
        job.job_modify_index = 0  # "this txn": resolved on read
        job.submit_time.CopyFrom(self.now())
        plan.put(self.keys.key(codec.JOBS, ns, job.id), j_entry[1], job)
        plan.put(self.keys.version_key(ns, job.id, job.version), 0, job)
        plan.reverted = target.version
        build = getattr(self, "_deployment", None)  # RegisterJob's helper, when composed
        new = build(job, current.create_index) if callable(build) else None
        if new is not None:
            plan.put(self.keys.key(codec.DEPLOYMENTS, ns, new.id), 0, new)
            self._cancel_others(plan, ns, job, failed.id)

    def _cancel_others(self, plan: _Plan, ns: str, job: job_pb2.Job, failed_id: str) -> None:
        table = self.cache.tables[codec.DEPLOYMENTS]
        for order in table.candidates("job_id", job.id).iterate(None, False):
            e = table.objects.get(order[1])
            if e is None or not order[1].startswith(ns + "/") or order[1] == f"{ns}/{failed_id}":
                continue
            d = table.decode_entry(e)
            if d.status in _ACTIVE:
                d.status = deployment_pb2.DEPLOYMENT_STATUS_CANCELLED
                d.status_description = f"Cancelled because job is updated to version {job.version}"
                d.modify_time.CopyFrom(self.now())
                plan.put(self.keys.key(codec.DEPLOYMENTS, ns, d.id), e[1], d)

    def _alloc_updates(self, plan: _Plan, updates: Any, promoted: dict[str, set[str]]) -> None:
        """Operator health, and the canary flag cleared on the canaries of newly
        promoted groups (as Nomad's state store does on promotion); one put per
        allocation even when both apply."""
        table = self.cache.tables[codec.ALLOCATIONS]
        changed: dict[str, tuple[int, Any]] = {}
        for u in updates:
            ns = u.namespace or "default"
            entry = table.objects.get(f"{ns}/{u.id}")
            if entry is None:
                raise NotFound(f"allocation {u.id!r} not found in namespace {ns!r}")
            a = table.decode_entry(entry)
            apply_allocation_update(a, u, self.now())
            changed[f"{ns}/{u.id}"] = (entry[1], a)
        for deployment_id, groups in promoted.items():
            for order in table.candidates("deployment_id", deployment_id).iterate(None, False):
                nsid = str(order[1])
                entry = table.objects.get(nsid)
                if entry is None:
                    continue
                mod, a = changed.get(nsid) or (entry[1], table.decode_entry(entry))
                if a.task_group in groups and a.deployment_status.canary:
                    a.deployment_status.canary = False
                    a.modify_time.CopyFrom(self.now())
                    changed[nsid] = (mod, a)
        for nsid, (mod, a) in changed.items():
            plan.put(self.keys.key(codec.ALLOCATIONS, *nsid.split("/", 1)), mod, a)


def newly_promoted(
    before: deployment_pb2.Deployment, after: deployment_pb2.Deployment
) -> dict[str, set[str]]:
    """{deployment id: groups promoted by this update} (empty when none)."""
    groups = {
        name for name, g in after.task_groups.items()
        if g.promoted and not (name in before.task_groups and before.task_groups[name].promoted)
    }
    return {after.id: groups} if groups else {}

"""UpdateDeployment's planner: the deployment watcher's one atomic write.

One request, one etcd txn, with everything a watcher decision implies:

- the deployment's full new value, compared on the ``modify_index`` the
  caller sent (:func:`deployment_seen`: a deployment changed since, e.g.
  cancelled by a new job version, is DEPLOYMENT_CHANGED and the watcher
  re-reads);
- ``stable_job_version``: the version record, and the job itself when that
  version is current, are marked stable (not a spec change, so the job's
  ``job_modify_index`` is kept, never re-derived from this txn);
- ``revert_job``: registered as the job's next version, only if the job's
  ``job_modify_index`` still equals ``revert_expected_job_modify_index``.
  When the user changed the job meanwhile the revert is *skipped*, not the
  whole write: the deployment's failure must be recorded either way, its
  description no longer claims the rollback (:mod:`drover.rollback_text`),
  and the response then carries no ``reverted_job_version``. A revert of a
  service job with update strategies starts a new running deployment, as
  a register would, and cancels the job's other active ones;
- ``allocation_updates``: health set by an operator (SetAllocHealth),
  merged like UpdateAllocations, each allocation compared on its revision;
- a group promoted by this update (``promoted`` false before, true now) has
  the canary flag of its canaries cleared in the same txn (Nomad's state
  store does the same on promotion);
- ``evaluations``: created with the write, compared absent.

Leader only (the shell requires the watcher's fence before planning). At
most ``ctx.max_objects`` objects per request (127 at etcd's default txn size).
"""

from __future__ import annotations

from typing import Any

from drover import rollback_text
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2, job_pb2
from drover.errors import InvalidArgument, NotFound
from drover.state.allocations.core.allocs import apply_allocation_update
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.rules import deployment_seen, next_version, within_cap
from drover.state.core.view import View
from drover.state.jobs.core.register import cancel_active, new_deployment


def newly_promoted(
    before: deployment_pb2.Deployment, after: deployment_pb2.Deployment
) -> dict[str, set[str]]:
    """{deployment id: groups promoted by this update} (empty when none)."""
    groups = {
        name for name, g in after.task_groups.items()
        if g.promoted and not (name in before.task_groups and before.task_groups[name].promoted)
    }
    return {after.id: groups} if groups else {}


def plan_deployment_update(view: View, ctx: WriteContext, request: Any,
                           src: deployment_pb2.Deployment, evs: list[Any]) -> WritePlan:
    ns = src.namespace
    before = deployment_seen(view, ns, src.id, src.modify_index)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    d = deployment_pb2.Deployment()
    d.CopyFrom(src)
    d.modify_time.CopyFrom(ctx.now)
    if request.HasField("revert_job") and not _revert_applies(
            view, d, request.revert_expected_job_modify_index):
        # skipped (module doc): the description must not claim it
        d.status_description = rollback_text.not_rolled_back(
            d.status_description, request.revert_job.version)
    plan.put(codec.DEPLOYMENTS, ns, d.id, d, before.mod)
    if request.HasField("stable_job_version"):
        _mark_stable(view, plan, ns, d.job_id, request.stable_job_version)
    reverted = None
    if request.HasField("revert_job"):
        reverted = _revert(view, ctx, plan, d, request.revert_job,
                           request.revert_expected_job_modify_index)
    _alloc_updates(view, ctx, plan, request.allocation_updates, newly_promoted(before.obj, d))
    for ev in evs:  # the call's own copies: set idempotently on each attempt
        if view.mod(codec.EVALUATIONS, ev.namespace, ev.id):
            raise InvalidArgument(f"evaluation {ev.id!r} already exists",
                                  metadata={"field": "evaluations"})
        if not ev.HasField("create_time"):
            ev.create_time.CopyFrom(ctx.now)
        ev.modify_time.CopyFrom(ctx.now)
        plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, 0)
    within_cap(len(plan.ops), "UpdateDeployment", ctx.max_objects)
    ids = [e.id for e in evs]

    def respond(rev: int) -> Any:
        resp = state_pb2.UpdateDeploymentResponse(index=rev, eval_ids=ids)
        if reverted is not None:
            resp.reverted_job_version = reverted
        return resp

    return plan.build(respond)


def _mark_stable(view: View, plan: PlanBuilder, ns: str, job_id: str, version: int) -> None:
    record = view.get(codec.JOB_VERSIONS, ns, f"{job_id}/{version:020d}")
    if record is None:
        raise NotFound(f"job {job_id!r} has no version {version} in namespace {ns!r}")
    if not record.obj.stable:  # indexes resolved on decode: kept on re-encode
        record.obj.stable = True
        plan.put_version(ns, job_id, version, record.obj, record.mod)
    job = view.get(codec.JOBS, ns, job_id)
    if job is not None and job.obj.version == version and not job.obj.stable:
        job.obj.stable = True
        plan.put(codec.JOBS, ns, job_id, job.obj, job.mod)


def _revert_applies(view: View, failed: deployment_pb2.Deployment,
                    expected_job_modify_index: int) -> bool:
    """The job still exists (not purged) and is the one that failed (the
    user did not change it meanwhile: their version wins, module doc)."""
    found = view.get(codec.JOBS, failed.namespace, failed.job_id)
    return found is not None and found.obj.job_modify_index == expected_job_modify_index


def _revert(view: View, ctx: WriteContext, plan: PlanBuilder, failed: deployment_pb2.Deployment,
            target: job_pb2.Job, expected_job_modify_index: int) -> int | None:
    """Register ``target`` as the job's next version; its version, or None if skipped."""
    if not _revert_applies(view, failed, expected_job_modify_index):
        return None
    found = view.get(codec.JOBS, failed.namespace, failed.job_id)
    assert found is not None  # _revert_applies
    current = found.obj
    ns = failed.namespace
    job = job_pb2.Job()
    job.CopyFrom(target)
    job.id, job.namespace = failed.job_id, ns
    job.version = next_version(current)
    job.stop, job.stable = False, False
    job.status = job_pb2.JOB_STATUS_PENDING
    job.job_modify_index = 0  # "this txn": resolved on read
    job.submit_time.CopyFrom(ctx.now)
    plan.put(codec.JOBS, ns, job.id, job, found.mod)
    plan.put_version(ns, job.id, job.version, job, 0)
    new = new_deployment(ctx, job, current.create_index)
    if new is not None:
        plan.put(codec.DEPLOYMENTS, ns, new.id, new, 0)
        cancel_active(view, ctx, plan, job, keep=failed.id)
    return int(target.version)


def _alloc_updates(view: View, ctx: WriteContext, plan: PlanBuilder, updates: Any,
                   promoted: dict[str, set[str]]) -> None:
    """Operator health, and the canary flag cleared on the canaries of newly
    promoted groups; one put per allocation even when both apply."""
    changed: dict[str, tuple[int, Any]] = {}
    for u in updates:
        ns = u.namespace or "default"
        found = view.get(codec.ALLOCATIONS, ns, u.id)
        if found is None:
            raise NotFound(f"allocation {u.id!r} not found in namespace {ns!r}")
        apply_allocation_update(found.obj, u, ctx.now)
        changed[f"{ns}/{u.id}"] = (found.mod, found.obj)
    for deployment_id, groups in promoted.items():
        for nsid in view.ids(codec.ALLOCATIONS, "deployment_id", deployment_id):
            a_ns, _, a_id = nsid.partition("/")
            if nsid in changed:
                mod, a = changed[nsid]
            else:
                found = view.get(codec.ALLOCATIONS, a_ns, a_id)
                if found is None:
                    continue
                mod, a = found.mod, found.obj
            if a.task_group in groups and a.deployment_status.canary:
                a.deployment_status.canary = False
                a.modify_time.CopyFrom(ctx.now)
                changed[nsid] = (mod, a)
    for nsid, (mod, a) in changed.items():
        a_ns, _, a_id = nsid.partition("/")
        plan.put(codec.ALLOCATIONS, a_ns, a_id, a, mod)

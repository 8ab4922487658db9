"""Job RPCs: register (job + version + evaluation + deployment, one txn),
get, list, versions, deregister.

RegisterJob writes, atomically: the job (compared on its mod_revision, or
absence), an immutable version record (for rollback), a ``job-register``
evaluation, and, for a service job whose groups have an update strategy, a
running deployment; older active deployments of the job are cancelled in
the same txn. Indexes that name "this txn" are stored as 0 and resolved on
read (:func:`drover.state.codec.decode`).
"""

from __future__ import annotations

import uuid
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2, evaluation_pb2, job_pb2
from drover.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from drover.paging import PageRequest
from drover.state import codec
from drover.state.reads import check_name, list_namespace, namespace_arg
from drover.state.reaper import Reaper
from drover.state.store import Compare, Op, Put
from drover.worker.resources import fill_defaults

ACTIVE_DEPLOYMENTS = (
    deployment_pb2.DEPLOYMENT_STATUS_RUNNING, deployment_pb2.DEPLOYMENT_STATUS_PAUSED,
)


class JobModifyIndexMismatch(FailedPrecondition):
    reason = "JOB_MODIFY_INDEX_MISMATCH"


_NOT_SPEC = ("version", "stable", "status", "status_description", "create_index",
             "modify_index", "job_modify_index", "submit_time", "stop")


def spec_unchanged(old: job_pb2.Job, new: job_pb2.Job) -> bool:
    """Whether ``new`` asks for exactly what the running ``old`` does (Nomad
    keeps the version and starts no deployment then)."""
    if old.stop:
        return False
    a, b = job_pb2.Job(), job_pb2.Job()
    a.CopyFrom(old)
    b.CopyFrom(new)
    for m in (a, b):
        for name in _NOT_SPEC:
            m.ClearField(name)
    return a == b


def validate_job(job: job_pb2.Job) -> None:
    check_name(job.id, "job.id")
    check_name(job.namespace, "job.namespace")
    if job.priority == 0:
        job.priority = 50
    if not 1 <= job.priority <= 100:
        raise InvalidArgument(
            f"job.priority must be 1..100, got {job.priority}", metadata={"field": "job.priority"}
        )
    if job.type == job_pb2.JOB_TYPE_UNSPECIFIED:
        job.type = job_pb2.JOB_TYPE_SERVICE
    # Nomad refuses both: a job with nowhere to run or nothing to run.
    if not job.datacenters:
        raise InvalidArgument("job.datacenters must name at least one datacenter",
                              metadata={"field": "job.datacenters"})
    for i, dc in enumerate(job.datacenters):
        if not dc:
            raise InvalidArgument(f"job.datacenters[{i}] is empty",
                                  metadata={"field": f"job.datacenters[{i}]"})
    if not job.task_groups:
        raise InvalidArgument("job.task_groups must hold at least one task group",
                              metadata={"field": "job.task_groups"})
    seen: set[str] = set()
    for i, tg in enumerate(job.task_groups):
        check_name(tg.name, f"job.task_groups[{i}].name")
        if tg.name in seen:
            raise InvalidArgument(f"task group {tg.name!r} appears twice",
                                  metadata={"field": f"job.task_groups[{i}].name"})
        seen.add(tg.name)
        if tg.count < 0:
            raise InvalidArgument(f"task group {tg.name!r} count must be >= 0",
                                  metadata={"field": f"job.task_groups[{i}].count"})
    fill_defaults(job)


def job_type_name(job: job_pb2.Job) -> str:
    return job_pb2.JobType.Name(job.type).removeprefix("JOB_TYPE_").lower()


class JobsRpc(Reaper):
    def _job(self, namespace: str, job_id: str) -> tuple[Any, int] | None:
        e = self.cache.tables[codec.JOBS].objects.get(f"{namespace}/{job_id}")
        if e is None:
            return None
        return self.cache.tables[codec.JOBS].decode_entry(e), e[1]

    def _new_eval(self, job: job_pb2.Job, trigger: str) -> evaluation_pb2.Evaluation:
        return evaluation_pb2.Evaluation(
            id=str(uuid.uuid4()), namespace=job.namespace, priority=job.priority,
            type=job_type_name(job), triggered_by=trigger, job_id=job.id,
            status=evaluation_pb2.EVALUATION_STATUS_PENDING, create_time=self.now(),
            modify_time=self.now(),
        )

    def _deployment(self, job: job_pb2.Job, create_index: int,
                    first: bool = False) -> deployment_pb2.Deployment | None:
        """The deployment of a new job version. Canaries only replace an
        earlier version: on a job's first version (``first``) Nomad places
        every allocation at once and asks for no canary."""
        if job.type != job_pb2.JOB_TYPE_SERVICE:
            return None
        groups = {tg.name: tg for tg in job.task_groups if tg.HasField("update")}
        if not groups:
            return None
        d = deployment_pb2.Deployment(
            id=str(uuid.uuid4()), namespace=job.namespace, job_id=job.id,
            job_version=job.version, job_create_index=create_index,
            status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING,
            status_description="Deployment is running", create_time=self.now(),
            modify_time=self.now(),
        )
        for name, tg in groups.items():
            st = d.task_groups[name]
            st.auto_revert, st.auto_promote = tg.update.auto_revert, tg.update.auto_promote
            st.desired_canaries = 0 if first else tg.update.canary
            st.desired_total = tg.count
            st.progress_deadline.CopyFrom(tg.update.progress_deadline)
        return d

    async def RegisterJob(self, request: Any, context: Any) -> Any:
        job = job_pb2.Job()
        job.CopyFrom(request.job)
        job.namespace = job.namespace or "default"
        validate_job(job)
        # Optimistic: the txn compares the job's mod_revision, so a stale
        # cache view costs a retry, never a lost update; only then sync.
        for attempt in range(3):
            if attempt:
                await self.cache.sync()
            try:
                return await self._register(job, request, context)
            except (Conflict, JobModifyIndexMismatch):
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _register(self, src: job_pb2.Job, request: Any, context: Any) -> Any:
        job = job_pb2.Job()
        job.CopyFrom(src)
        current = self._job(job.namespace, job.id)
        if request.enforce_index:
            have = current[0].job_modify_index if current else 0
            if have != request.job_modify_index:
                raise JobModifyIndexMismatch(
                    f"job {job.id!r} has job_modify_index {have}, not "
                    f"{request.job_modify_index}; re-read it and retry",
                    metadata={"field": "job_modify_index"},
                )
        job_key = self.keys.key(codec.JOBS, job.namespace, job.id)
        compares = [Compare(job_key, "mod", current[1] if current else 0)]
        if current is not None and spec_unchanged(current[0], job):
            return await self._register_unchanged(current[0], compares, context)
        job.version = current[0].version + 1 if current else 0
        job.stop, job.stable = False, False
        job.status = job_pb2.JOB_STATUS_PENDING
        job.job_modify_index = 0
        job.submit_time.CopyFrom(self.now())
        ev = self._new_eval(job, "job-register")
        ops: list[Op] = [
            Put(job_key, codec.encode(job)),
            Put(self.keys.version_key(job.namespace, job.id, job.version), codec.encode(job)),
        ]
        dep = self._deployment(job, current[0].create_index if current else 0,
                               first=current is None or current[0].stop)
        if dep is not None:
            ev.deployment_id = dep.id
            ops.append(Put(self.keys.key(codec.DEPLOYMENTS, job.namespace, dep.id),
                           codec.encode(dep)))
            ops.extend(self._cancel_active(job, compares))
        ops.append(Put(self.keys.key(codec.EVALUATIONS, job.namespace, ev.id), codec.encode(ev)))
        rev = await self.writer.commit(compares, ops, self.fence(context),
                                       conflict=f"job {job.id!r} changed concurrently; retry")
        return state_pb2.RegisterJobResponse(
            job_modify_index=rev, eval_id=ev.id, deployment_id=dep.id if dep else "",
            version=job.version, index=rev,
        )

    async def _register_unchanged(self, job: job_pb2.Job, compares: list[Compare],
                                  context: Any) -> Any:
        """Nomad's unchanged re-register: no new version, no deployment, the
        one in flight goes on; only an evaluation (which will find nothing
        to change)."""
        ev = self._new_eval(job, "job-register")
        ev.job_modify_index = job.job_modify_index
        ops: list[Op] = [Put(self.keys.key(codec.EVALUATIONS, job.namespace, ev.id),
                             codec.encode(ev))]
        rev = await self.writer.commit(compares, ops, self.fence(context),
                                       conflict=f"job {job.id!r} changed concurrently; retry")
        return state_pb2.RegisterJobResponse(
            job_modify_index=job.job_modify_index, eval_id=ev.id, version=job.version,
            index=rev, warnings=["job spec is unchanged: kept version "
                                 f"{job.version}, no new deployment"])

    def _cancel_active(self, job: job_pb2.Job, compares: list[Compare]) -> list[Op]:
        table = self.cache.tables[codec.DEPLOYMENTS]
        ops: list[Op] = []
        for order in table.candidates("job_id", job.id).iterate(None, False):
            e = table.objects.get(order[1])
            if e is None or not order[1].startswith(job.namespace + "/"):
                continue
            d = table.decode_entry(e)
            if d.status in ACTIVE_DEPLOYMENTS:
                d.status = deployment_pb2.DEPLOYMENT_STATUS_CANCELLED
                d.status_description = f"Cancelled because job is updated to version {job.version}"
                d.modify_time.CopyFrom(self.now())
                key = self.keys.key(codec.DEPLOYMENTS, d.namespace, d.id)
                compares.append(Compare(key, "mod", e[1]))
                ops.append(Put(key, codec.encode(d)))
        return ops

    async def GetJob(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.id, "id")
        index = await self.reader.prepare(codec.JOBS, request.query)
        if request.HasField("version"):
            table = self.cache.tables[codec.JOB_VERSIONS]
            job = table.decode(f"{ns}/{request.id}/{request.version:020d}")
        else:
            found = self._job(ns, request.id)
            job = found[0] if found else None
        if job is None:
            raise NotFound(f"job {request.id!r} not found in namespace {ns!r}"
                           + (f" at version {request.version}" if request.HasField("version")
                              else ""))
        return state_pb2.GetJobResponse(job=job, meta=self.reader.meta(index))

    async def ListJobs(self, request: Any, context: Any) -> Any:
        index = await self.reader.prepare(codec.JOBS, request.query)
        items, token = self.reader.list(codec.JOBS, PageRequest(
            "ListJobs", request.page_size, request.page_token, request.order_by,
            list_namespace(request.namespace), request.prefix), request.filter)
        return state_pb2.ListJobsResponse(jobs=items, next_page_token=token,
                                          meta=self.reader.meta(index))

    async def ListJobVersions(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.id, "id")
        index = await self.reader.prepare(codec.JOB_VERSIONS, request.query)
        table = self.cache.tables[codec.JOB_VERSIONS]
        orders = list(table.candidates("job", f"{ns}/{request.id}").iterate(None, True))
        if not orders:
            raise NotFound(f"job {request.id!r} not found in namespace {ns!r}")
        versions = [v for v in (table.decode(o[1]) for o in orders) if v is not None]
        versions.sort(key=lambda j: j.version, reverse=True)
        return state_pb2.ListJobVersionsResponse(versions=versions, meta=self.reader.meta(index))

    async def DeregisterJob(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.id, "id")
        await self.cache.sync()
        current = self._job(ns, request.id)
        if current is None:
            raise NotFound(f"job {request.id!r} not found in namespace {ns!r}")
        if request.purge:
            return await self._purge(ns, request.id, context)
        job, mod = current
        key = self.keys.key(codec.JOBS, ns, job.id)
        ev = self._new_eval(job, "job-deregister")
        ops: list[Op] = [Put(self.keys.key(codec.EVALUATIONS, ns, ev.id), codec.encode(ev))]
        job.stop = True
        job.version += 1
        job.job_modify_index = 0
        ops.append(Put(key, codec.encode(job)))
        ops.append(Put(self.keys.version_key(ns, job.id, job.version), codec.encode(job)))
        rev = await self.writer.commit([Compare(key, "mod", mod)], ops, self.fence(context),
                                       conflict=f"job {job.id!r} changed concurrently; retry")
        return state_pb2.DeregisterJobResponse(eval_id=ev.id, job_modify_index=rev, index=rev)

    async def _purge(self, ns: str, job_id: str, context: Any) -> Any:
        """Purge means gone: the job and all it owns, in bounded txns (:mod:`.reaper`)."""
        tally, rev = await self.purge_job(ns, job_id, self.fence(context))
        return state_pb2.DeregisterJobResponse(
            job_modify_index=rev, index=rev,
            purged_versions=tally.count(codec.JOB_VERSIONS),
            purged_deployments=tally.count(codec.DEPLOYMENTS),
            purged_evaluations=tally.count(codec.EVALUATIONS),
            purged_allocations=tally.count(codec.ALLOCATIONS),
            purge_txns=tally.txns,
        )

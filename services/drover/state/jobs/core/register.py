"""Job planners: register (new version, or unchanged), deregister.

RegisterJob writes, atomically in one txn: the job (compared on its
mod_revision, or absence), an immutable version record (for rollback), a
``job-register`` evaluation, and, for a service job whose groups have an
update strategy, a running deployment; older active deployments of the job
are cancelled in the same txn (each compared). Version bumps: a changed
spec is version ``current + 1`` (0 for a first registration); an
unchanged re-register keeps the version, starts no deployment and writes
only an evaluation (Nomad). Indexes that name "this txn" are stored as 0
and resolved on read (:func:`drover.state.core.codec.decode`).
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2, evaluation_pb2, job_pb2
from drover.errors import InvalidArgument, NotFound
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.rules import job_index_matches, next_version
from drover.state.core.view import View, refuse
from drover.state.errors import JobNotStopped, JobStopped, JobVersionMismatch

ACTIVE_DEPLOYMENTS = (
    deployment_pb2.DEPLOYMENT_STATUS_RUNNING, deployment_pb2.DEPLOYMENT_STATUS_PAUSED,
)

_NOT_SPEC = ("version", "stable", "status", "status_description", "create_index",
             "modify_index", "job_modify_index", "submit_time", "stop", "summary")


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


def version_record(job: job_pb2.Job) -> job_pb2.Job:
    """What a version keeps of the job: its spec and version, not the live
    counts (summary) nor a pending purge, which belong to the job alone."""
    record = job_pb2.Job()
    record.CopyFrom(job)
    record.ClearField("summary")
    record.purge_requested = False
    return record


def job_type_name(job: job_pb2.Job) -> str:
    return job_pb2.JobType.Name(job.type).removeprefix("JOB_TYPE_").lower()


def new_eval(ctx: WriteContext, job: job_pb2.Job, trigger: str) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(
        id=ctx.new_id(), namespace=job.namespace, priority=job.priority,
        type=job_type_name(job), triggered_by=trigger, job_id=job.id,
        status=evaluation_pb2.EVALUATION_STATUS_PENDING, create_time=ctx.timestamp(),
        modify_time=ctx.timestamp(),
    )


def new_deployment(ctx: WriteContext, job: job_pb2.Job, create_index: int,
                   first: bool = False) -> deployment_pb2.Deployment | None:
    """The deployment of a new job version, if it needs one. Canaries only
    replace an earlier version: on a job's first version (``first``) Nomad
    places every allocation at once and asks for no canary."""
    if job.type != job_pb2.JOB_TYPE_SERVICE:
        return None
    # max_parallel 0 is Nomad's "no update strategy": no deployment for the group.
    groups = {tg.name: tg for tg in job.task_groups
              if tg.HasField("update") and tg.update.max_parallel > 0}
    if not groups:
        return None
    d = deployment_pb2.Deployment(
        id=ctx.new_id(), namespace=job.namespace, job_id=job.id,
        job_version=job.version, job_create_index=create_index,
        status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING,
        status_description="Deployment is running", create_time=ctx.timestamp(),
        modify_time=ctx.timestamp(),
    )
    for name, tg in groups.items():
        st = d.task_groups[name]
        st.auto_revert, st.auto_promote = tg.update.auto_revert, tg.update.auto_promote
        st.desired_canaries = 0 if first else tg.update.canary
        st.desired_total = tg.count
        st.progress_deadline.CopyFrom(tg.update.progress_deadline)
    return d


#: Nomad's description of a deployment cancelled by a job stop (the reconciler's).
STOPPED_DESCRIPTION = "Cancelled because job is stopped"


def cancel_active(view: View, ctx: WriteContext, plan: PlanBuilder, job: job_pb2.Job,
                  keep: str = "", description: str = "") -> None:
    """Cancel the job's running or paused deployments (but ``keep``), each
    compared; ``description`` defaults to Nomad's for a newer version."""
    ns = job.namespace
    for nsid in view.ids(codec.DEPLOYMENTS, "job_id", job.id):
        d_ns, _, d_id = nsid.partition("/")
        if d_ns != ns or d_id == keep:
            continue
        found = view.get(codec.DEPLOYMENTS, d_ns, d_id)
        if found is None or found.obj.status not in ACTIVE_DEPLOYMENTS:
            continue
        d = found.obj
        d.status = deployment_pb2.DEPLOYMENT_STATUS_CANCELLED
        d.status_description = (description
                                or f"Cancelled because job is updated to version {job.version}")
        d.modify_time.CopyFrom(ctx.now)
        plan.put(codec.DEPLOYMENTS, ns, d.id, d, found.mod)


def plan_register(view: View, ctx: WriteContext, src: job_pb2.Job, *,
                  enforce_index: bool = False, job_modify_index: int = 0,
                  trigger: str = "job-register") -> WritePlan:
    """RegisterJob (module doc). ``src`` is validated (:func:`validate_job`);
    ``trigger``: the evaluation's triggered_by (``job-scaling`` for a scale)."""
    job = job_pb2.Job()
    job.CopyFrom(src)
    ns = job.namespace
    current = view.get(codec.JOBS, ns, job.id)
    if enforce_index:
        job_index_matches(view, job.id, current, job_modify_index)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    conflict = f"job {job.id!r} changed concurrently; retry"
    plan.compare_mod(codec.JOBS, ns, job.id, current.mod if current else 0)
    if current is not None and spec_unchanged(current.obj, job):
        return _plan_unchanged(ctx, plan, current.obj, conflict, trigger)
    old = current.obj if current else None
    job.version = next_version(old)
    job.stop, job.stable = False, False
    job.status = job_pb2.JOB_STATUS_PENDING
    job.job_modify_index = 0
    job.submit_time.CopyFrom(ctx.now)
    ev = new_eval(ctx, job, trigger)
    plan.put(codec.JOBS, ns, job.id, job, None)
    plan.put_version(ns, job.id, job.version, version_record(job), None)
    dep = new_deployment(ctx, job, old.create_index if old else 0,
                         first=old is None or old.stop)
    if dep is not None:
        ev.deployment_id = dep.id
        plan.put(codec.DEPLOYMENTS, ns, dep.id, dep, None)
        cancel_active(view, ctx, plan, job)
    plan.put(codec.EVALUATIONS, ns, ev.id, ev, None)
    version, dep_id = job.version, dep.id if dep else ""
    return plan.build(lambda rev: state_pb2.RegisterJobResponse(
        job_modify_index=rev, eval_id=ev.id, deployment_id=dep_id, version=version, index=rev,
    ), conflict=conflict)


def _plan_unchanged(ctx: WriteContext, plan: PlanBuilder, job: job_pb2.Job,
                    conflict: str, trigger: str = "job-register") -> WritePlan:
    """Nomad's unchanged re-register: no new version, no deployment, the
    one in flight goes on; only an evaluation (which will find nothing to
    change), still compared on the job so a concurrent change re-plans."""
    ev = new_eval(ctx, job, trigger)
    ev.job_modify_index = job.job_modify_index
    plan.put(codec.EVALUATIONS, job.namespace, ev.id, ev, None)
    return plan.build(lambda rev: state_pb2.RegisterJobResponse(
        job_modify_index=job.job_modify_index, eval_id=ev.id, version=job.version, index=rev,
        warnings=[f"job spec is unchanged: kept version {job.version}, no new deployment"],
    ), conflict=conflict)


def plan_deregister(view: View, ctx: WriteContext, ns: str, job_id: str, *,
                    purge_requested: bool = False) -> WritePlan:
    """DeregisterJob without purge: the job stopped as a new version (the
    stop is a spec change: ``job_modify_index`` is this txn), its active
    deployment cancelled ("Cancelled because job is stopped", as Nomad's
    reconciler does: nothing is left to roll out or revert) and a
    ``job-deregister`` evaluation (the worker stops every allocation),
    compared on the job's revision. The job is dead once its allocations
    are terminal (:mod:`drover.state.jobs.core.job_status`)."""
    found = view.get(codec.JOBS, ns, job_id)
    if found is None:
        raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
    job: Any = found.obj
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    ev = new_eval(ctx, job, "job-deregister")
    plan.put(codec.EVALUATIONS, ns, ev.id, ev, None)
    job.stop = True
    job.purge_requested = job.purge_requested or purge_requested
    job.version = next_version(job)
    job.job_modify_index = 0
    plan.put(codec.JOBS, ns, job.id, job, found.mod)
    plan.put_version(ns, job.id, job.version, version_record(job), None)
    cancel_active(view, ctx, plan, job, description=STOPPED_DESCRIPTION)
    return plan.build(lambda rev: state_pb2.DeregisterJobResponse(
        eval_id=ev.id, job_modify_index=rev, index=rev,
    ), conflict=f"job {job.id!r} changed concurrently; retry")


def plan_start(view: View, ctx: WriteContext, ns: str, job_id: str) -> WritePlan:
    """StartJob (``nomad job start``): the latest version that was not a
    stop, registered again as a new version (:func:`plan_register`: a new
    deployment without canaries, a ``job-register`` evaluation). Refused
    unless the job exists and is stopped."""
    found = view.get(codec.JOBS, ns, job_id)
    if found is None:
        raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
    if not found.obj.stop:
        refuse(view, JobNotStopped(
            f"job {job_id!r} is not stopped (version {found.obj.version}); "
            "only a stopped job can be started", metadata={"version": str(found.obj.version)}))
    source = _last_running_version(view, ns, job_id) or found.obj
    job = job_pb2.Job()
    job.CopyFrom(source)
    job.stop = False
    plan = plan_register(view, ctx, job)
    from_version = int(source.version)

    def respond(rev: int) -> state_pb2.StartJobResponse:
        r = plan.respond(rev)
        return state_pb2.StartJobResponse(
            eval_id=r.eval_id, version=r.version, deployment_id=r.deployment_id,
            job_modify_index=r.job_modify_index, index=r.index, from_version=from_version)
    return WritePlan(plan.compares, plan.ops, plan.events, respond, plan.conflict)


def _last_running_version(view: View, ns: str, job_id: str) -> job_pb2.Job | None:
    """The newest version record that was not a stop (None: none kept)."""
    best = None
    for nsid in view.ids(codec.JOB_VERSIONS, "job", f"{ns}/{job_id}"):
        v_ns, _, vid = nsid.partition("/")
        f = view.get(codec.JOB_VERSIONS, v_ns, vid)
        if f is not None and not f.obj.stop and (best is None or f.obj.version > best.version):
            best = f.obj
    return best


def plan_revert(view: View, ctx: WriteContext, ns: str, job_id: str, version: int,
                enforce_prior_version: int | None = None) -> WritePlan:
    """RevertJob (Nomad's ``Job.Revert``): the kept version's spec registered
    as the next version (:func:`plan_register`, so a spec equal to the
    current one writes only an evaluation, as Nomad's register does)."""
    found = view.get(codec.JOBS, ns, job_id)
    if found is None:
        raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
    current = found.obj
    if enforce_prior_version is not None and current.version != enforce_prior_version:
        refuse(view, JobVersionMismatch(
            f"Current job has version {current.version}; enforcing version "
            f"{enforce_prior_version}", metadata={"version": str(current.version)}))
    if version == current.version:
        raise InvalidArgument("can't revert to current version",
                              metadata={"field": "version", "version": str(version)})
    record = view.get(codec.JOB_VERSIONS, ns, f"{job_id}/{version:020d}")
    if record is None:
        refuse(view, NotFound(
            f"job {job_id!r} in namespace {ns!r} at version {version} not found "
            "(older versions than the tracked ones are not kept)",
            metadata={"field": "version"}))
    job = job_pb2.Job()
    job.CopyFrom(record.obj)
    job.stop = False
    plan = plan_register(view, ctx, job)

    def respond(rev: int) -> state_pb2.RevertJobResponse:
        r = plan.respond(rev)
        return state_pb2.RevertJobResponse(
            eval_id=r.eval_id, version=r.version, deployment_id=r.deployment_id,
            job_modify_index=r.job_modify_index, index=r.index, reverted_to=version,
            warnings=r.warnings)
    return WritePlan(plan.compares, plan.ops, plan.events, respond, plan.conflict)


def plan_scale(view: View, ctx: WriteContext, ns: str, job_id: str, group: str, count: int,
               enforce_index: int | None = None, message: str = "") -> WritePlan:
    """ScaleJob (Nomad's ``Job.Scale``): the job with ``group``'s count set,
    registered as a new version with a ``job-scaling`` evaluation (the same
    count again writes only the evaluation, as an unchanged register)."""
    found = view.get(codec.JOBS, ns, job_id)
    if found is None:
        raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
    job = found.obj
    if job.stop:
        refuse(view, JobStopped(f"job {job_id!r} is stopped: start it (job start) to scale it",
                                metadata={"version": str(job.version)}))
    if count < 0:
        raise InvalidArgument(f"count must be >= 0, got {count}", metadata={"field": "count"})
    if job.type == job_pb2.JOB_TYPE_SYSTEM and count > 1:
        raise InvalidArgument('jobs of type "system" can only be scaled between 0 and 1',
                              metadata={"field": "count"})
    tg = next((g for g in job.task_groups if g.name == group), None)
    if tg is None:
        raise InvalidArgument(
            f"task group {group!r} specified for scaling does not exist in job {job_id!r}",
            metadata={"field": "group"})
    previous = tg.count
    tg.count = count
    plan = plan_register(view, ctx, job, enforce_index=enforce_index is not None,
                         job_modify_index=enforce_index or 0, trigger="job-scaling")

    def respond(rev: int) -> state_pb2.ScaleJobResponse:
        r = plan.respond(rev)
        return state_pb2.ScaleJobResponse(
            eval_id=r.eval_id, version=r.version, deployment_id=r.deployment_id,
            job_modify_index=r.job_modify_index, index=r.index, previous_count=previous,
            warnings=[*r.warnings, *([f"message: {message}"] if message else [])])
    return WritePlan(plan.compares, plan.ops, plan.events, respond, plan.conflict)

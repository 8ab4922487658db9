"""Request-level checks of the write RPCs (pure; errors name the request's field).

Each returns the request's objects as *copies* with defaults filled in; a
request message is never changed, except by :func:`owned_evals` (and
:func:`validated_eval_updates`), for handlers that own their request.
Field-level limits common to every RPC stay in :mod:`drover.validation`;
what is here is what a write means.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

from drover.api.types.v1 import allocation_pb2, deployment_pb2, evaluation_pb2, job_pb2
from drover.drain.migrate import migrate_of
from drover.drain.migrate import validate as validate_migrate
from drover.errors import InvalidArgument
from drover.jobspec.defaults import canonicalize
from drover.worker import reschedule

#: A valid namespace or id. One compiled match, not a set built per call:
#: checked ~3 times per evaluation written (it was ~6 % of the state
#: process's CPU on the broker's batched path).
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
#: id, namespace and job_id of an evaluation in one match: "/" is no name
#: character, so the joined string splits only one way (job_id may be empty).
_EVAL_NAMES = re.compile(
    r"[A-Za-z0-9_.\-]{1,128}/[A-Za-z0-9_.\-]{1,128}/(?:[A-Za-z0-9_.\-]{1,128})?").fullmatch
_EVAL_FIELDS = attrgetter("id", "namespace", "priority", "type", "job_id")
_NS_ID = attrgetter("namespace", "id")
_MODIFY_INDEX = attrgetter("modify_index")
DEFAULT_NAMESPACE = "default"
ALL_NAMESPACES = "*"


def check_name(value: str, field: str, *, allow_all: bool = False) -> str:
    """A namespace or id: non-empty, at most 128 of [A-Za-z0-9-_.]."""
    if _NAME.fullmatch(value) is not None:
        return value
    if allow_all and value == ALL_NAMESPACES:
        return value
    if not value:
        raise InvalidArgument(f"{field} is required", metadata={"field": field})
    raise InvalidArgument(
        f"{field} {value!r} is invalid: use 1-128 letters, digits, '-', '_' or '.'",
        metadata={"field": field},
    )


def namespace_arg(value: str, *, allow_all: bool = True) -> str:
    return check_name(value or DEFAULT_NAMESPACE, "namespace", allow_all=allow_all)


def validate_job(src: job_pb2.Job) -> job_pb2.Job:
    """A copy of ``src`` with Nomad's defaults filled in
    (:func:`drover.jobspec.defaults.canonicalize`), checked."""
    job = job_pb2.Job()
    job.CopyFrom(src)
    canonicalize(job)
    check_name(job.id, "job.id")
    check_name(job.namespace, "job.namespace")
    if not 1 <= job.priority <= 100:
        raise InvalidArgument(
            f"job.priority must be 1..100, got {job.priority}", metadata={"field": "job.priority"}
        )
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
        if tg.update.max_parallel < 0 or tg.update.canary < 0:
            raise InvalidArgument(
                f"task group {tg.name!r} update max_parallel and canary must be >= 0",
                metadata={"field": f"job.task_groups[{i}].update"})
        _check_reschedule(job, tg, f"job.task_groups[{i}].reschedule")
        if tg.HasField("migrate") and (errs := validate_migrate(migrate_of(tg))):
            raise InvalidArgument(f"task group {tg.name!r}: {errs[0]}",
                                  metadata={"field": f"job.task_groups[{i}].migrate"})
    return job


def _check_reschedule(job: job_pb2.Job, tg: job_pb2.TaskGroup, field: str) -> None:
    """Nomad's rules for the group's reschedule block, merged over the job
    type's defaults (an unset block is the default, always valid)."""
    if not tg.HasField("reschedule"):
        return
    policy = reschedule.resolve(job.type, tg.reschedule)
    wrong = reschedule.problems(policy) if policy is not None else []
    if wrong:
        raise InvalidArgument(f"task group {tg.name!r} reschedule: {'; '.join(wrong)}",
                              metadata={"field": field})


def eval_is_complete(ev: evaluation_pb2.Evaluation) -> bool:
    """True when :func:`validate_eval` would neither refuse ``ev`` nor fill
    anything in (an evaluation as the broker writes it back, or as a client
    sends it complete): one attribute read and one match instead of ~10
    calls. Never True for what :func:`validate_eval` refuses."""
    eid, ns, priority, typ, job_id = _EVAL_FIELDS(ev)
    return bool(ns and typ and 1 <= priority <= 100
                and _EVAL_NAMES(f"{eid}/{ns}/{job_id}") is not None)


def validate_eval(f: str, ev: evaluation_pb2.Evaluation) -> None:
    check_name(ev.id, f"{f}.id")
    ev.namespace = ev.namespace or DEFAULT_NAMESPACE
    check_name(ev.namespace, f"{f}.namespace")
    if ev.priority == 0:
        ev.priority = 50
    if not 1 <= ev.priority <= 100:
        raise InvalidArgument(f"{f}.priority must be 1..100, got {ev.priority}",
                              metadata={"field": f"{f}.priority"})
    if not ev.type:
        raise InvalidArgument(f"{f}.type is required (service, batch, system or _core)",
                              metadata={"field": f"{f}.type"})
    if ev.job_id:
        check_name(ev.job_id, f"{f}.job_id")


def validated_evals(items: Iterable[evaluation_pb2.Evaluation],
                    field: str = "evaluations") -> list[evaluation_pb2.Evaluation]:
    """Copies of ``items`` with defaults filled in, each checked (errors name
    ``field[i]``); the request's own messages are never changed."""
    out = []
    for i, src in enumerate(items):
        ev = evaluation_pb2.Evaluation()
        ev.CopyFrom(src)
        if not eval_is_complete(ev):
            validate_eval(f"{field}[{i}]", ev)
        out.append(ev)
    return out


def owned_evals(items: Iterable[evaluation_pb2.Evaluation],
                field: str = "evaluations") -> list[evaluation_pb2.Evaluation]:
    """Like :func:`validated_evals`, but checks and fills in ``items``
    themselves, no copy: only for a request the handler owns outright, that
    nothing reads after it (a gRPC server hands each call its own freshly
    parsed request, and no interceptor looks at it once the handler runs).
    The broker's path writes every evaluation through UpsertEvaluations and
    UpdateEvaluations, where a copy per evaluation was measurable."""
    out = list(items)
    for i, ev in enumerate(out):
        if not eval_is_complete(ev):  # the path is formatted only when needed
            validate_eval(f"{field}[{i}]", ev)
    return out


def validated_eval_updates(request: Any) -> tuple[list[evaluation_pb2.Evaluation],
                                                  list[evaluation_pb2.Evaluation]]:
    """UpdateEvaluations: (updates, creates); each update names the index it is
    based on, and no evaluation appears twice. The request's own evaluations
    (:func:`owned_evals`): the handler owns the request."""
    if not request.updates and not request.creates:
        raise InvalidArgument("set updates, creates or both", metadata={"field": "updates"})
    updates = owned_evals(request.updates, "updates")
    creates = owned_evals(request.creates, "creates")
    if not all(map(_MODIFY_INDEX, updates)):
        i = [ev.modify_index for ev in updates].index(0)
        raise InvalidArgument(
            f"updates[{i}].modify_index is required: the index of the evaluation "
            "the update is based on", metadata={"field": f"updates[{i}].modify_index"})
    idents = [*map(_NS_ID, updates), *map(_NS_ID, creates)]
    if len(set(idents)) == len(idents):
        return updates, creates
    seen: set[tuple[str, str]] = set()  # a duplicate: find the first, to name it
    for field, evs in (("updates", updates), ("creates", creates)):
        for i, ev in enumerate(evs):
            ident = (ev.namespace, ev.id)
            if ident in seen:
                raise InvalidArgument(f"{field}[{i}]: evaluation {ev.id!r} appears twice",
                                      metadata={"field": f"{field}[{i}].id"})
            seen.add(ident)
    return updates, creates


def validated_allocs(items: Iterable[allocation_pb2.Allocation]) -> list[allocation_pb2.Allocation]:
    """UpsertAllocations: copies, each with an id, a namespace and a job."""
    out = []
    for i, src in enumerate(items):
        a = allocation_pb2.Allocation()
        a.CopyFrom(src)
        check_name(a.id, f"allocations[{i}].id")
        a.namespace = a.namespace or DEFAULT_NAMESPACE
        check_name(a.namespace, f"allocations[{i}].namespace")
        check_name(a.job_id, f"allocations[{i}].job_id")
        out.append(a)
    return out


def validated_deployment_update(request: Any) -> tuple[deployment_pb2.Deployment,
                                                       list[evaluation_pb2.Evaluation]]:
    d = deployment_pb2.Deployment()
    d.CopyFrom(request.deployment)
    check_name(d.id, "deployment.id")
    d.namespace = d.namespace or DEFAULT_NAMESPACE
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


def validated_plan(request: Any, ns: str) -> tuple[
    list[allocation_pb2.Allocation], list[allocation_pb2.Allocation],
    list[evaluation_pb2.Evaluation],
]:
    """SubmitPlan: (placements, updates, evaluations), all of the plan's job."""
    if not request.placements and not request.updates and not request.evaluations:
        raise InvalidArgument("a plan must place, update or evaluate something",
                              metadata={"field": "placements"})
    out: list[list[allocation_pb2.Allocation]] = [[], []]
    for n, (name, items) in enumerate((("placements", request.placements),
                                       ("updates", request.updates))):
        for i, src in enumerate(items):
            a = allocation_pb2.Allocation()
            a.CopyFrom(src)
            f = f"{name}[{i}]"
            check_name(a.id, f"{f}.id")
            a.namespace = a.namespace or ns
            if a.namespace != ns or a.job_id != request.job_id:
                raise InvalidArgument(f"{f} is not an allocation of job {request.job_id!r} "
                                      f"in namespace {ns!r}", metadata={"field": f})
            if n == 0:
                check_name(a.node_id, f"{f}.node_id")
                if a.desired_status != allocation_pb2.ALLOC_DESIRED_STATUS_RUN:
                    raise InvalidArgument(f"{f}.desired_status must be RUN",
                                          metadata={"field": f"{f}.desired_status"})
            out[n].append(a)
    evs = validated_evals(request.evaluations)
    _no_twice([a.id for a in out[0] + out[1]], "allocation", "updates")
    _no_twice([e.id for e in evs], "evaluation", "evaluations")
    return out[0], out[1], evs


def _no_twice(ids: list[str], what: str, field: str) -> None:
    """One write per object in a plan (etcd refuses a txn naming a key twice)."""
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise InvalidArgument(f"the plan writes {what} {i!r} twice: send each {what} once "
                                  "(placements and updates together)", metadata={"field": field})
        seen.add(i)

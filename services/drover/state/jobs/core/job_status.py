"""A job's status (pending, running, dead) and summary, kept by the writes
that change them.

Nomad's state store recomputes a job's status whenever its allocations,
evaluations or the job itself change (``setJobStatus``); readers never
recount. drover does the same in one place: :func:`follow` runs after
every planner (:meth:`drover.state.pipeline.WriteCalls.transact`) and,
for each job whose allocations, evaluations or job record the plan puts,
adds the job's new status to the same txn when it changed.

The rule (:func:`status_of`, Nomad's ``getJobStatus``):

- a system job is ``dead`` when stopped, else ``running``;
- any non-terminal allocation (desired to run and not complete, failed or
  lost on its client: Nomad's ``TerminalStatus``) makes it ``running``;
- else any non-terminal evaluation (pending or blocked: a reschedule due
  later, a deregister not yet processed) makes it ``pending``;
- else, with allocations or evaluations, it is ``dead`` (a service whose
  allocations all failed with its policy spent, a stopped job, a finished
  batch job); with neither it is ``pending``.

Evaluations count, so a plan that puts only evaluations is followed too:
for a job already ``running`` (which evaluations cannot change) after one
lookup of the job; the broker's hot path pays a decode and that lookup per
evaluation. A status that only evaluations changed is written when the txn
has room: a broker batch already at the cap leaves it to the job's next
write (its summary is unchanged, so nothing is lost but the word).

Invariant: after any committed write, a job's stored status is
:func:`status_of` of what etcd holds (the job's compare in the txn makes a
concurrent change re-plan, so two writers never each see half).
A plan already at the txn cap that would need a job's write too is
refused as too large (INVALID_ARGUMENT naming ``max_objects``, as every
request over the cap): the worker's plans leave room for it (125 writes, one
evaluation), and so do the node planners and the plan applier's unblocking.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2
from drover.coord.kv import Compare, Put
from drover.state.core import codec
from drover.state.core.plan import Event, OnPut, WritePlan
from drover.state.core.rules import within_cap
from drover.state.core.view import View
from drover.state.jobs.core import job_summary

_TERMINAL_DESIRED = frozenset({allocation_pb2.ALLOC_DESIRED_STATUS_STOP,
                               allocation_pb2.ALLOC_DESIRED_STATUS_EVICT})
_TERMINAL_CLIENT = frozenset({allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
                              allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
                              allocation_pb2.ALLOC_CLIENT_STATUS_LOST})
_TERMINAL_EVAL = frozenset({evaluation_pb2.EVALUATION_STATUS_COMPLETE,
                            evaluation_pb2.EVALUATION_STATUS_FAILED,
                            evaluation_pb2.EVALUATION_STATUS_CANCELED})
_WATCHED = frozenset({codec.ALLOCATIONS, codec.EVALUATIONS, codec.JOBS})


def alloc_terminal(a: allocation_pb2.Allocation) -> bool:
    """Nomad's ``TerminalStatus``: server-terminal (desired stop or evict) or
    client-terminal (complete, failed, lost)."""
    return a.desired_status in _TERMINAL_DESIRED or a.client_status in _TERMINAL_CLIENT


def eval_terminal(e: evaluation_pb2.Evaluation) -> bool:
    """Nomad's ``Evaluation.TerminalStatus``: complete, failed or cancelled
    (not pending or blocked)."""
    return e.status in _TERMINAL_EVAL


def status_of(job: job_pb2.Job, allocs: Iterable[allocation_pb2.Allocation],
              evals: Iterable[evaluation_pb2.Evaluation]) -> int:
    """The job's status (module doc, Nomad's ``getJobStatus``); ``allocs``
    and ``evals`` may be lazy iterables: read only until the answer is known."""
    if job.type == job_pb2.JOB_TYPE_SYSTEM:
        return job_pb2.JOB_STATUS_DEAD if job.stop else job_pb2.JOB_STATUS_RUNNING
    seen = False
    for a in allocs:
        seen = True
        if not alloc_terminal(a):
            return job_pb2.JOB_STATUS_RUNNING
    for e in evals:
        seen = True
        if not eval_terminal(e):
            return job_pb2.JOB_STATUS_PENDING
    return job_pb2.JOB_STATUS_DEAD if seen else job_pb2.JOB_STATUS_PENDING


def spec_read(view: View, ns: str, job_id: str, index: int) -> bool:
    """A reader of the job at ``index`` saw its current spec: only its status
    changed since (a status write moves the job's revision, not its
    ``job_modify_index``), so a plan made from it still holds."""
    found = view.get(codec.JOBS, ns, job_id) if index else None
    return found is not None and found.obj.job_modify_index <= index


def follow(view: View, plan: WritePlan, keys: codec.KeyCodec, on_put: OnPut | None,
           max_objects: int) -> WritePlan:
    """``plan`` with the status and summary (:mod:`.job_summary`) of every
    job it touches brought up to date (module doc)."""
    events = plan.events
    if not any(e.kind in _WATCHED for e in events):
        return plan
    puts: dict[str, dict[tuple[str, str], Any]] = {k: {} for k in _WATCHED}
    job_op: dict[tuple[str, str], int] = {}
    touched: dict[tuple[str, str], list[tuple[str, int | None, int]]] = {}
    for i, e in enumerate(events):
        if e.kind not in _WATCHED:
            continue
        ident = (e.namespace, e.id)
        if e.op != "put":
            # Gone for the overlay, but a delete (GC, purge) changes no
            # job's status: a dead batch job stays dead when its
            # allocations are collected.
            puts[e.kind][ident] = None
            continue
        value = plan.ops[i].value  # type: ignore[union-attr]
        obj = codec.decode(e.kind, value, 0, 0)
        puts[e.kind][ident] = obj
        if e.kind == codec.JOBS:
            job_op[ident] = i
            touched.setdefault(ident, [])
            continue
        if e.kind == codec.EVALUATIONS:
            if obj.job_id:
                touched.setdefault((e.namespace, obj.job_id), [])
            continue
        moves = touched.setdefault((e.namespace, obj.job_id), [])
        if e.kind == codec.ALLOCATIONS:
            old = (view.get(e.kind, e.namespace, e.id)
                   if view.mod(e.kind, e.namespace, e.id) else None)
            moves.append((obj.task_group, old.obj.client_status if old else None,
                          obj.client_status))
    ops, compares, new_events = list(plan.ops), list(plan.compares), list(events)
    changed = False
    for (ns, job_id), moves in touched.items():
        if (ns, job_id) in puts[codec.JOBS] and puts[codec.JOBS][(ns, job_id)] is None:
            continue  # deleted by this plan
        at = job_op.get((ns, job_id))
        found = view.get(codec.JOBS, ns, job_id)
        if at is not None:
            job = puts[codec.JOBS][(ns, job_id)]
            # The summary is this module's alone: carried over every write
            # of the job (a new version comes from the user's spec).
            job.ClearField("summary")
            if found is not None:
                for name, tg in found.obj.summary.items():
                    job.summary[name].CopyFrom(tg)
        elif found is None:
            continue  # purged: nothing to keep
        else:
            job = found.obj
            if not moves and job.status == job_pb2.JOB_STATUS_RUNNING:
                continue  # only evaluations changed: they cannot end "running"
        counted = False
        for group, before, after in moves:
            counted = job_summary.count_alloc(job.summary, group, before, after) or counted
        if at is not None and job.job_modify_index == 0:  # a spec write: "this txn"
            job_summary.requeue(job)
        allocs = _current(view, puts[codec.ALLOCATIONS], codec.ALLOCATIONS, ns, job_id)
        evals = _current(view, puts[codec.EVALUATIONS], codec.EVALUATIONS, ns, job_id)
        status = status_of(job, allocs, evals)
        if status == job.status and not counted and at is None:
            continue
        job.status = status
        key = keys.key(codec.JOBS, ns, job_id)
        value = codec.encode(job)
        if at is not None:
            ops[at] = Put(key, value)
        else:
            assert found is not None
            if not moves and len(ops) + 1 > max_objects:
                # Only evaluations changed (a broker batch filled to the
                # cap): the status waits for the job's next write.
                continue
            # The summary counts transitions: it cannot be left to a later
            # write, so a request too big to carry its jobs' writes is refused.
            within_cap(len(ops) + 1, "the write with its jobs' summaries", max_objects)
            if not any(c.key == key and c.target == "mod" for c in compares):
                compares.append(Compare(key, "mod", found.mod))
            ops.append(Put(key, value))
            new_events.append(Event(codec.JOBS, ns, job_id, "put"))
        if on_put is not None:
            on_put(key, value, codec.JOBS, ns, job_id, job)
        changed = True
    if not changed:
        return plan
    return WritePlan(tuple(compares), tuple(ops), tuple(new_events), plan.respond,
                     plan.conflict, plan.retry, plan.final_conflict)


def _current(view: View, planned: dict[tuple[str, str], Any], kind: str, ns: str,
             job_id: str) -> Iterable[Any]:
    """The job's objects of ``kind`` as they will be after the plan: the
    view's, with the plan's puts and deletes over them (lazily decoded)."""
    seen: set[tuple[str, str]] = set()
    for nsid in view.ids(kind, "job_id", job_id):
        o_ns, _, oid = nsid.partition("/")
        if o_ns != ns:
            continue
        seen.add((o_ns, oid))
        if (o_ns, oid) in planned:
            obj = planned[(o_ns, oid)]
            if obj is not None:
                yield obj
            continue
        found = view.get(kind, o_ns, oid)
        if found is not None:
            yield found.obj
    for ident, obj in planned.items():
        if ident not in seen and obj is not None and ident[0] == ns and obj.job_id == job_id:
            yield obj

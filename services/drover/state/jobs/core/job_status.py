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
from dataclasses import dataclass
from typing import Any

from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2
from drover.coord.kv import Compare, Op, Put
from drover.state.core import codec
from drover.state.core.plan import Event, OnPut, WritePlan
from drover.state.core.rules import within_cap
from drover.state.core.view import Found, View
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
              evals: Iterable[evaluation_pb2.Evaluation]) -> job_pb2.JobStatus:
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


#: A job, as ``(namespace, id)``.
Ident = tuple[str, str]
#: An allocation's client status moving: ``(task group, before, after)``;
#: ``before`` is None for a new allocation (:func:`.job_summary.count_alloc`).
Move = tuple[str, int | None, int]


@dataclass
class _Planned:
    """What a plan writes of the watched kinds, decoded once."""

    #: By kind, every object the plan puts (None: one it deletes).
    puts: dict[str, dict[Ident, Any]]
    #: The index of the plan's op that writes a job itself.
    job_op: dict[Ident, int]
    #: The jobs to bring up to date, each with its allocations' moves.
    touched: dict[Ident, list[Move]]


@dataclass
class _Txn:
    """The plan's compares, ops and events as :func:`follow` extends them."""

    compares: list[Compare]
    ops: list[Op]
    events: list[Event]


def follow(view: View, plan: WritePlan, keys: codec.KeyCodec, on_put: OnPut | None,
           max_objects: int) -> WritePlan:
    """``plan`` with the status and summary (:mod:`.job_summary`) of every
    job it touches brought up to date (module doc)."""
    if not any(e.kind in _WATCHED for e in plan.events):
        return plan
    planned = _read(view, plan)
    txn = _Txn(list(plan.compares), list(plan.ops), list(plan.events))
    changed = False
    for ident, moves in planned.touched.items():
        target = _job_to_follow(view, planned, ident, moves)
        if target is None:
            continue
        job, found = target
        if not _bring_up_to_date(view, planned, ident, job, moves):
            continue
        key, value = keys.key(codec.JOBS, *ident), codec.encode(job)
        if not _write(txn, ident, planned.job_op.get(ident), found, key, value,
                      evals_only=not moves, max_objects=max_objects):
            continue
        if on_put is not None:
            on_put(key, value, codec.JOBS, ident[0], ident[1], job)
        changed = True
    if not changed:
        return plan
    return WritePlan(tuple(txn.compares), tuple(txn.ops), tuple(txn.events), plan.respond,
                     plan.conflict, plan.retry, plan.final_conflict)


def _read(view: View, plan: WritePlan) -> _Planned:
    """The plan's puts and deletes of the watched kinds, the jobs they touch
    and the client status moves of their allocations."""
    planned = _Planned({k: {} for k in _WATCHED}, {}, {})
    for i, e in enumerate(plan.events):
        if e.kind not in _WATCHED:
            continue
        ident = (e.namespace, e.id)
        if e.op != "put":
            # Gone for the overlay, but a delete (GC, purge) changes no
            # job's status: a dead batch job stays dead when its
            # allocations are collected.
            planned.puts[e.kind][ident] = None
            continue
        value = plan.ops[i].value  # type: ignore[union-attr]
        obj = codec.decode(e.kind, value, 0, 0)
        planned.puts[e.kind][ident] = obj
        if e.kind == codec.JOBS:
            planned.job_op[ident] = i
            planned.touched.setdefault(ident, [])
        elif e.kind == codec.EVALUATIONS:
            if obj.job_id:
                planned.touched.setdefault((e.namespace, obj.job_id), [])
        else:  # an allocation
            old = (view.get(e.kind, e.namespace, e.id)
                   if view.mod(e.kind, e.namespace, e.id) else None)
            planned.touched.setdefault((e.namespace, obj.job_id), []).append(
                (obj.task_group, old.obj.client_status if old else None, obj.client_status))
    return planned


def _job_to_follow(view: View, planned: _Planned, ident: Ident,
                   moves: list[Move]) -> tuple[job_pb2.Job, Found | None] | None:
    """The job record to bring up to date -- the plan's own write of it, or
    the stored one -- with the stored one's revisions; None when there is
    nothing to follow (deleted or purged, or already running and only
    evaluations changed)."""
    jobs = planned.puts[codec.JOBS]
    if ident in jobs and jobs[ident] is None:
        return None  # deleted by this plan
    found = view.get(codec.JOBS, *ident)
    if ident in planned.job_op:
        job: job_pb2.Job = jobs[ident]
        # The summary is this module's alone: carried over every write
        # of the job (a new version comes from the user's spec).
        job.ClearField("summary")
        if found is not None:
            for name, tg in found.obj.summary.items():
                job.summary[name].CopyFrom(tg)
        return job, found
    if found is None:
        return None  # purged: nothing to keep
    if not moves and found.obj.status == job_pb2.JOB_STATUS_RUNNING:
        return None  # only evaluations changed: they cannot end "running"
    return found.obj, found


def _bring_up_to_date(view: View, planned: _Planned, ident: Ident, job: job_pb2.Job,
                      moves: list[Move]) -> bool:
    """Count ``moves`` into ``job``'s summary and set its status (a spec
    write requeues its groups first); whether the job needs writing."""
    counted = False
    for group, before, after in moves:
        counted = job_summary.count_alloc(job.summary, group, before, after) or counted
    own_write = ident in planned.job_op
    if own_write and job.job_modify_index == 0:  # a spec write: "this txn"
        job_summary.requeue(job)
    ns, job_id = ident
    status = status_of(
        job, _current(view, planned.puts[codec.ALLOCATIONS], codec.ALLOCATIONS, ns, job_id),
        _current(view, planned.puts[codec.EVALUATIONS], codec.EVALUATIONS, ns, job_id))
    if status == job.status and not counted and not own_write:
        return False
    job.status = status
    return True


def _write(txn: _Txn, ident: Ident, at: int | None, found: Found | None, key: bytes,
           value: bytes, *, evals_only: bool, max_objects: int) -> bool:
    """Put the job's new record in ``txn``: over the plan's own write of it
    (op ``at``), else as one more op compared on the stored record. False
    when left to the job's next write: only evaluations changed it and the
    txn is full."""
    if at is not None:
        txn.ops[at] = Put(key, value)
        return True
    assert found is not None
    if evals_only and len(txn.ops) + 1 > max_objects:
        # Only evaluations changed (a broker batch filled to the
        # cap): the status waits for the job's next write.
        return False
    # The summary counts transitions: it cannot be left to a later
    # write, so a request too big to carry its jobs' writes is refused.
    within_cap(len(txn.ops) + 1, "the write with its jobs' summaries", max_objects)
    if not any(c.key == key and c.target == "mod" for c in txn.compares):
        txn.compares.append(Compare(key, "mod", found.mod))
    txn.ops.append(Put(key, value))
    txn.events.append(Event(codec.JOBS, ident[0], ident[1], "put"))
    return True


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

"""A job's per-group summary, as Nomad's state store keeps it (pure).

Nomad counts transitions, it does not recount (``updateSummaryWithAlloc``):

- an allocation inserted as pending: ``starting`` +1 and ``queued`` -1
  (never below 0);
- a client status change old -> new: the new bucket +1 (pending ->
  starting, running, failed, complete, lost); the old bucket -1 only for
  pending, running and lost: ``failed`` and ``complete`` are cumulative;
- a desired-status change alone changes nothing.

``queued`` is set when the job's spec is written (:func:`requeue`): the
group's count less what is starting or running, 0 for a stopped job (Nomad
takes it from the scheduler's evaluation; drover's worker writes no
queued counts, so the state service derives it from the same counters).

The summary is written by :func:`drover.state.jobs.core.job_status.follow`, in
the txn that changes the allocation, so it is exact at every revision.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from drover.api.types.v1 import allocation_pb2, job_pb2

_C = allocation_pb2
#: Client status -> the summary field it counts in.
BUCKET = {
    _C.ALLOC_CLIENT_STATUS_UNSPECIFIED: "starting",
    _C.ALLOC_CLIENT_STATUS_PENDING: "starting",
    _C.ALLOC_CLIENT_STATUS_RUNNING: "running",
    _C.ALLOC_CLIENT_STATUS_FAILED: "failed",
    _C.ALLOC_CLIENT_STATUS_COMPLETE: "complete",
    _C.ALLOC_CLIENT_STATUS_LOST: "lost",
}
#: Buckets that count allocations in that status now (decremented on leaving).
CURRENT = frozenset({"starting", "running", "lost"})

Summary = MutableMapping[str, job_pb2.TaskGroupSummary]


def count_alloc(summary: Summary, group: str, old: int | None, new: int) -> bool:
    """Count one allocation of ``group`` going from client status ``old``
    (None: it is new) to ``new``; whether anything changed."""
    after = BUCKET.get(new)  # type: ignore[call-overload]
    if old is None:
        tg = summary[group]
        if after == "starting":
            tg.queued = max(0, tg.queued - 1)
        if after is not None:
            setattr(tg, after, getattr(tg, after) + 1)
        return True
    before = BUCKET.get(old)  # type: ignore[call-overload]
    if before == after:
        return False
    tg = summary[group]
    if after is not None:
        setattr(tg, after, getattr(tg, after) + 1)
    if before in CURRENT:
        setattr(tg, before, max(0, getattr(tg, before) - 1))
    return True


def requeue(job: job_pb2.Job) -> None:
    """Set ``queued`` of every group of ``job`` from its spec (module doc);
    groups no longer in the spec keep their counts (their allocations may
    still be stopping) and queue nothing."""
    groups = {tg.name: tg.count for tg in job.task_groups}
    for name in groups:
        job.summary[name]
    for name, tg in job.summary.items():
        want = 0 if job.stop else groups.get(name, 0)
        tg.queued = max(0, want - tg.starting - tg.running)

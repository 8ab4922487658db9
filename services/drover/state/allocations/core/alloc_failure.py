"""A client reporting an allocation failed: its ``alloc-failure`` evaluation.

Nomad's client-update path (``Node.UpdateAlloc``) evaluates the job of an
allocation that failed when its group's reschedule policy still allows a
reschedule. Here the evaluation is written in the same txn as the
client's report, already due when the replacement is (``wait_until`` =
fail time + the policy's next delay, :mod:`drover.worker.reschedule`), and
the failed allocation names it in ``followup_eval_id``: the worker that
gets it reschedules at once (the planner's "reschedule now" for its own
follow-up), and an earlier evaluation of the job leaves the allocation for
it.

Failures of one job due within 5s of each other share one evaluation
(Nomad's batchedFailedAllocWindowSize). The evaluations are bounded by the
txn: when the request already fills it, the rest get none, and the
planner's "reschedule later" makes one on the job's next evaluation.
A failure the policy no longer allows (spent, or no policy) gets none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext
from drover.state.core.view import View
from drover.state.jobs.core.register import new_eval
from drover.worker import reschedule

TRIGGER = "alloc-failure"
DESCRIPTION = "created for delayed rescheduling"

FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
_STOPPED = (allocation_pb2.ALLOC_DESIRED_STATUS_STOP, allocation_pb2.ALLOC_DESIRED_STATUS_EVICT)


def job_of(view: View, alloc: allocation_pb2.Allocation) -> job_pb2.Job | None:
    """The job version the allocation runs (the current job if that is it)."""
    found = view.get(codec.JOBS, alloc.namespace, alloc.job_id)
    if found is not None and found.obj.version == alloc.job_version:
        return found.obj  # type: ignore[no-any-return]
    record = view.get(codec.JOB_VERSIONS, alloc.namespace,
                      f"{alloc.job_id}/{alloc.job_version:020d}")
    return record.obj if record is not None else None


def newly_failed(before: int, alloc: allocation_pb2.Allocation) -> bool:
    """A report that turns a running-or-pending allocation meant to run failed."""
    return (alloc.client_status == FAILED and before != FAILED
            and alloc.desired_status not in _STOPPED and not alloc.followup_eval_id)


def plan_failure_evals(view: View, ctx: WriteContext, plan: PlanBuilder,
                       failed: Sequence[allocation_pb2.Allocation], room: int) -> dict[str, str]:
    """Create at most ``room`` evaluations for ``failed`` (each already
    merged, to be put by the caller after this) and set their
    ``followup_eval_id``; {alloc id: eval id}."""
    due: dict[tuple[str, str], list[tuple[float, str]]] = {}
    by_id: dict[str, allocation_pb2.Allocation] = {}
    jobs: dict[tuple[str, str], job_pb2.Job] = {}
    for a in failed:
        job = job_of(view, a)
        if job is None:
            continue
        at, ok = reschedule.alloc_next_time(reschedule.policy_for(job, a.task_group), a)
        if not ok:
            continue
        key = (a.namespace, a.job_id)
        jobs.setdefault(key, job)
        due.setdefault(key, []).append((at, a.id))
        by_id[a.id] = a
    out: dict[str, str] = {}
    for key, items in sorted(due.items()):
        current = view.get(codec.JOBS, *key)
        job = current.obj if current is not None else jobs[key]
        for at, ids in reschedule.batch_later(items):
            if room <= 0:
                return out  # module doc: the txn is full
            room -= 1
            ev = new_eval(ctx, job, TRIGGER)
            ev.status_description = DESCRIPTION
            ev.job_modify_index = job.job_modify_index
            ev.wait_until.CopyFrom(reschedule.timestamp(at))
            plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, 0)
            for alloc_id in ids:
                by_id[alloc_id].followup_eval_id = ev.id
                out[alloc_id] = ev.id
    return out


def finished(alloc: Any, before: int, now: Any) -> None:
    """Stamp ``finished_at`` when the client's report makes the allocation
    complete or failed (the reschedule delay counts from it)."""
    if alloc.client_status != before and alloc.client_status in (
            FAILED, allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE):
        alloc.finished_at.CopyFrom(now)

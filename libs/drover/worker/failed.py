"""What the planner does with a failed allocation (pure): Nomad's reconciler
``updateByReschedulable`` and ``createRescheduleLaterEvals``.

A failed allocation of the job's current version, still meant to run, is
judged by its group's reschedule policy (:mod:`.reschedule`) at the
snapshot's time:

- **now**: the policy allows another reschedule and it is due (within
  1 s), or this evaluation is the follow-up made for it
  (``followup_eval_id``). The failed allocation is stopped ("alloc was
  rescheduled because it failed", ``next_allocation`` naming the
  replacement) and a replacement with the same name is placed, naming it
  in ``previous_allocation`` and carrying the reschedule tracker.
- **later**: allowed but not due, and no follow-up evaluation exists yet:
  the plan creates ``alloc-failure`` evaluations due then (those within
  5 s of each other share one) and records each in the allocation's
  ``followup_eval_id``. Until then the allocation holds its slot.
- **keep**: the policy is spent or disabled, or a follow-up is already
  pending, or the allocation belongs to the job's *failed* deployment
  (Nomad reschedules in a failed deployment except the allocations of
  that deployment: the failure, and any revert, stand). The allocation
  holds its slot and nothing replaces it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from drover.api.types.v1 import allocation_pb2, deployment_pb2, evaluation_pb2, job_pb2

from . import reschedule
from .reschedule import Policy

TRIGGER = "alloc-failure"
LATER_DESCRIPTION = "created for delayed rescheduling"
STOP_DESCRIPTION = "alloc was rescheduled because it failed"


class Verdict(enum.Enum):
    NOW = "now"
    LATER = "later"
    KEEP = "keep"


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    #: When the reschedule is due (0 when never).
    at: float = 0.0


def judge(a: allocation_pb2.Allocation, policy: Policy | None, eval_id: str, now: float,
          deployment: deployment_pb2.Deployment | None) -> Judgement:
    """The module doc's rule for one failed allocation."""
    if (deployment is not None and deployment.status == deployment_pb2.DEPLOYMENT_STATUS_FAILED
            and a.deployment_id == deployment.id):
        return Judgement(Verdict.KEEP)
    at, ok = reschedule.alloc_next_time(policy, a)
    if not ok:
        return Judgement(Verdict.KEEP)
    if (eval_id and a.followup_eval_id == eval_id) or at - now <= reschedule.NOW_WINDOW:
        return Judgement(Verdict.NOW, at)
    if not a.followup_eval_id:
        return Judgement(Verdict.LATER, at)
    return Judgement(Verdict.KEEP, at)


def replacement_tracker(policy: Policy | None, a: allocation_pb2.Allocation,
                        now: float) -> allocation_pb2.RescheduleTracker:
    """The tracker the replacement of ``a`` carries."""
    events = reschedule.tracker_for_replacement(
        policy, reschedule.events_of(a), a.id, a.node_id, reschedule.fail_time(a), now)
    return reschedule.tracker_proto(events)


Due = Sequence[tuple[float, allocation_pb2.Allocation]]


def later_evals(job: job_pb2.Job, eval_id: str, due: Due, new_id: Callable[[], str],
                ) -> tuple[list[evaluation_pb2.Evaluation], list[allocation_pb2.Allocation]]:
    """The follow-up evaluations for allocations due later, and the
    allocations' new values naming theirs in ``followup_eval_id``."""
    by_id = {a.id: a for _, a in due}
    evals, updates = [], []
    job_type = job_pb2.JobType.Name(job.type).removeprefix("JOB_TYPE_").lower()
    for at, ids in reschedule.batch_later([(at, a.id) for at, a in due]):
        ev = evaluation_pb2.Evaluation(
            id=new_id(), namespace=job.namespace, priority=job.priority or 50,
            type=job_type, job_id=job.id, job_modify_index=job.job_modify_index,
            triggered_by=TRIGGER, previous_eval=eval_id,
            status=evaluation_pb2.EVALUATION_STATUS_PENDING,
            status_description=LATER_DESCRIPTION, wait_until=reschedule.timestamp(at))
        evals.append(ev)
        for alloc_id in ids:
            out = allocation_pb2.Allocation()
            out.CopyFrom(by_id[alloc_id])
            out.followup_eval_id = ev.id
            updates.append(out)
    return evals, updates

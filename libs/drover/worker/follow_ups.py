"""The evaluations a worker acks an evaluation with (pure; ids passed in).

A plan that left allocations queued (they fit no node) ends in a blocked
evaluation ("queued-allocs") that records what it waits for
(:func:`.blocked.blocked_need`); a plan capped by its size (``Plan.more``)
in a pending "plan-continuation"; plans committed only in part too often
(:mod:`.attempts`) in a blocked one "created due to placement conflicts".
"""

from __future__ import annotations

from collections.abc import Callable

from drover.api.types.v1 import evaluation_pb2

from .attempts import DESCRIPTION, TRIGGER
from .blocked import blocked_need
from .plan import Plan, Snapshot

BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED
PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING


def _next(ev: evaluation_pb2.Evaluation, new_id: Callable[[], str], triggered_by: str,
          status: evaluation_pb2.EvaluationStatus,
          description: str) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(
        id=new_id(), namespace=ev.namespace, priority=ev.priority, type=ev.type,
        job_id=ev.job_id, previous_eval=ev.id, deployment_id=ev.deployment_id,
        triggered_by=triggered_by, status=status, status_description=description)


def follow_ups(ev: evaluation_pb2.Evaluation, snap: Snapshot, plan: Plan, index: int,
               new_id: Callable[[], str]) -> list[evaluation_pb2.Evaluation]:
    """The follow-up of ``plan`` (none when it did all); a blocked one
    records what it needs and the index its plan was computed at (so
    capacity changes unblock it by need)."""
    if not (plan.more or plan.queued):
        return []
    if plan.queued and not plan.more:
        follow = _next(ev, new_id, "queued-allocs", BLOCKED,
                       f"{sum(plan.queued.values())} allocations fit no node")
        blocked_need(follow, snap, plan, index)
        return [follow]
    return [_next(ev, new_id, "plan-continuation", PENDING, "the plan was capped; continue")]


def conflict_blocked(ev: evaluation_pb2.Evaluation,
                     new_id: Callable[[], str]) -> evaluation_pb2.Evaluation:
    """Nomad's answer to attempts run out: a blocked evaluation that the
    next capacity change unblocks."""
    return _next(ev, new_id, TRIGGER, BLOCKED, DESCRIPTION)

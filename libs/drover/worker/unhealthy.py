"""Allocations the deployment watcher marked to reschedule (pure; the
planner's hook).

An allocation of an active deployment that runs but is unhealthy (never
passed its checks by ``healthy_deadline``) fails the deployment at once only
when Nomad's ``shouldFailEarly`` says so; otherwise the watcher sets its
``desired_transition.reschedule`` (Nomad's ``allowReplacements``) with an
evaluation. The planner then treats it like a failed allocation whose
reschedule is due *now*:

- the group's reschedule policy must still allow an attempt
  (``RescheduleEligible`` on the allocation's tracker at the snapshot's
  time): a spent or disabled policy keeps it running, and the deployment
  fails by its progress deadline (or fail-early, which then holds);
- an allocation of the job's *failed* deployment is kept, as for failed
  ones (:mod:`.failed`): the failure, and any revert, stand;
- otherwise it is stopped ("alloc was rescheduled because it failed",
  ``next_allocation`` naming the replacement) and a replacement with the
  same name is placed, naming it in ``previous_allocation`` and carrying the
  reschedule tracker, away from the nodes it and its predecessors ran on
  (:mod:`.penalty`). As for every reschedule, the stop goes only with a
  placement: with no room anywhere it keeps running and the plan reports it
  queued (a blocked evaluation, with its need, waits for room).

Nomad's reconciler reschedules only *failed* allocations, flag or not; drover
also replaces an unhealthy running one, so a rollout whose progress deadline
allows it gets another try instead of waiting for the deadline.
"""

from __future__ import annotations

from drover.api.types.v1 import allocation_pb2, deployment_pb2

from . import reschedule
from .reschedule import Policy


def marked(a: allocation_pb2.Allocation) -> bool:
    """The deployment watcher asked for this allocation to be replaced."""
    return a.desired_transition.reschedule


def replace_now(a: allocation_pb2.Allocation, policy: Policy | None, now: float,
                deployment: deployment_pb2.Deployment | None) -> bool:
    """Whether a marked allocation is replaced in this plan (module doc)."""
    if (deployment is not None and deployment.status == deployment_pb2.DEPLOYMENT_STATUS_FAILED
            and a.deployment_id == deployment.id):
        return False
    return reschedule.eligible(policy, reschedule.events_of(a), now)


def replacement_tracker(policy: Policy | None, a: allocation_pb2.Allocation,
                        now: float) -> allocation_pb2.RescheduleTracker:
    """The tracker its replacement carries: the fail time is now (it is
    replaced for being unhealthy, not for having finished)."""
    events = reschedule.tracker_for_replacement(
        policy, reschedule.events_of(a), a.id, a.node_id, now, now)
    return reschedule.tracker_proto(events)

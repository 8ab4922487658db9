"""When an unhealthy allocation fails its deployment at once (Nomad's
``shouldFailEarly``).

An unhealthy allocation of a deployment fails it immediately only when

1. its group has no progress deadline (``progress_deadline`` zero: fail on
   the first unhealthy allocation), or
2. the deployment is active and the group's reschedule policy allows the
   allocation no further reschedule (``RescheduleEligible`` at ``now``:
   spent, disabled, or a system job's none).

Otherwise the scheduler replaces it (the worker's planner reschedules a
failed allocation by the policy) and the progress deadline decides.
Which allocations are unhealthy is the accounting's rule
(:mod:`.accounting`): live with health false, or failed, reported
unhealthy and not replaced yet.
"""

from __future__ import annotations

from collections.abc import Iterable

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.worker import reschedule

from .accounting import health_of, is_live
from .walltime import duration_seconds

_FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
_STOPPED = (allocation_pb2.ALLOC_DESIRED_STATUS_STOP, allocation_pb2.ALLOC_DESIRED_STATUS_EVICT)


def unhealthy(allocs: Iterable[allocation_pb2.Allocation]) -> list[allocation_pb2.Allocation]:
    """The allocations that count as unhealthy (module doc)."""
    allocs = list(allocs)
    replaced = {a.previous_allocation for a in allocs if a.previous_allocation}
    return [a for a in allocs if health_of(a) is False and (
        is_live(a) or (a.client_status == _FAILED and a.desired_status not in _STOPPED
                       and a.id not in replaced and not a.next_allocation))]


def should_fail_early(alloc: allocation_pb2.Allocation, group: deployment_pb2.DeploymentGroupState,
                      job: job_pb2.Job, active: bool, now: float) -> bool:
    """The module doc's rule for one unhealthy allocation."""
    if health_of(alloc) is not False:
        return False
    if duration_seconds(group.progress_deadline) <= 0:
        return True
    if active:
        policy = reschedule.policy_for(job, alloc.task_group)
        return not reschedule.eligible(policy, reschedule.events_of(alloc), now)
    return False


def failing_groups(work: deployment_pb2.Deployment, allocs: Iterable[allocation_pb2.Allocation],
                   job: job_pb2.Job, active: bool, now: float) -> list[str]:
    """The task groups one of whose unhealthy allocations fails the deployment now."""
    out = set()
    for a in unhealthy(allocs):
        group = work.task_groups.get(a.task_group)
        if group is not None and should_fail_early(a, group, job, active, now):
            out.add(a.task_group)
    return sorted(out)

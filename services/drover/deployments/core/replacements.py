"""Which unhealthy allocations the watcher asks the scheduler to replace
(Nomad's ``allowReplacements``; pure).

When an allocation of an active deployment is unhealthy and the deployment
does not fail early (:mod:`.fail_early`: the group has a progress deadline
and the allocation's reschedule policy still allows an attempt), Nomad's
deployment watcher sets ``DesiredTransition.Reschedule`` on it and creates
an evaluation; the scheduler then replaces it under the group's reschedule
policy and the progress deadline decides the deployment.

drover marks the allocations that still *run* unhealthy (never healthy by
``healthy_deadline``): a failed one already gets its ``alloc-failure``
evaluation at the policy's delay from the client's report (the state
service), which marking would only duplicate. An allocation is marked once:
the watcher remembers what it marked (the stored flag comes back on the
allocation stream).
"""

from __future__ import annotations

from collections.abc import Iterable

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2

from .accounting import health_of, is_live
from .fail_early import should_fail_early


def to_reschedule(work: deployment_pb2.Deployment, allocs: Iterable[allocation_pb2.Allocation],
                  job: job_pb2.Job, marked: frozenset[str] | set[str], now: float) -> list[str]:
    """The ids to mark now, sorted (module doc); only for an active deployment."""
    if work.status not in (deployment_pb2.DEPLOYMENT_STATUS_RUNNING,
                           deployment_pb2.DEPLOYMENT_STATUS_PAUSED):
        return []
    out = []
    for a in allocs:
        if (not is_live(a) or health_of(a) is not False or a.id in marked
                or a.desired_transition.reschedule):
            continue
        group = work.task_groups.get(a.task_group)
        if group is None or should_fail_early(a, group, job, True, now):
            continue
        out.append(a.id)
    return sorted(out)

"""Health accounting: per task group counts of a deployment's allocations.

The stored counters are Nomad's (``updateDeploymentWithAlloc``): they
accumulate. ``placed`` counts every allocation ever placed in the
deployment's group, whatever became of it (stopped, failed, replaced);
``healthy`` and ``unhealthy`` count every health report of those
allocations. So 5 placements of which 4 reported unhealthy show
``Placed 5 Unhealthy 4``, not only the one still running. They are derived
from the set of allocations the watcher holds (every allocation of the
deployment, terminal ones included, until garbage collection removes
them), not incremented on events, so a missed, repeated or reordered event
can't skew them: the answer depends only on the current set. An allocation
counts as healthy or unhealthy once its ``deployment_status.healthy`` is
set (by the client or SetAllocHealth); unset means "not decided yet".

What the watcher steers by is live: only a *live* allocation, one meant to
run (desired RUN; proto3's unset value is read as RUN) and not terminal on
the client (not COMPLETE, FAILED or LOST), counts toward ``live`` (what is
left to place), the canaries and the healthy canaries.

A promoted canary is no longer a canary: the state service clears its flag
when the promotion is stored. The group's ``placed_canaries`` keeps naming
it while it lives, so :func:`tally` takes the ids a promoted group already
listed (``promoted_canaries``) and counts them as canaries without the flag.

The group predicates read only the stored ``DeploymentGroupState`` so that
the deadline rule (:mod:`.deadline`) can use them without allocations.
Before promotion only canaries are placed in a canary group, so its
``healthy_allocs`` is its number of healthy canaries.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from drover.api.types.v1 import allocation_pb2, deployment_pb2

from .walltime import from_timestamp


@dataclass(frozen=True)
class GroupTally:
    #: Every allocation placed in the group (Nomad's accumulating counter).
    placed: int = 0
    canaries: tuple[str, ...] = ()
    healthy: int = 0
    unhealthy: int = 0
    healthy_canaries: int = 0
    #: The earliest create time among the allocations counted placed (wall
    #: seconds; None: none has one): when the group's first one was placed.
    first_placed: float | None = None
    #: The live ones among them (module doc).
    live: int = 0


def health_of(alloc: allocation_pb2.Allocation) -> bool | None:
    """True/False once decided, None while the allocation's health is unknown."""
    status = alloc.deployment_status
    return status.healthy if status.HasField("healthy") else None


_RUN = (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, allocation_pb2.ALLOC_DESIRED_STATUS_UNSPECIFIED)
CLIENT_TERMINAL = frozenset({
    allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
    allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
    allocation_pb2.ALLOC_CLIENT_STATUS_LOST,
})


def is_live(alloc: allocation_pb2.Allocation) -> bool:
    """Meant to run and not terminal on the client: the allocations that count."""
    return alloc.desired_status in _RUN and alloc.client_status not in CLIENT_TERMINAL


def tally(
    allocs: Iterable[allocation_pb2.Allocation],
    promoted_canaries: Collection[str] = (),
) -> dict[str, GroupTally]:
    """Counts per task group name (module doc: which allocations count);
    canary ids sorted so equal sets compare equal."""
    placed: dict[str, int] = {}
    live: dict[str, int] = {}
    canaries: dict[str, list[str]] = {}
    healthy: dict[str, int] = {}
    unhealthy: dict[str, int] = {}
    healthy_canaries: dict[str, int] = {}
    first: dict[str, float] = {}
    for alloc in allocs:
        group = alloc.task_group
        placed[group] = placed.get(group, 0) + 1
        created = from_timestamp(alloc.create_time)
        if created is not None and created < first.get(group, created + 1):
            first[group] = created
        health = health_of(alloc)
        if health is True:
            healthy[group] = healthy.get(group, 0) + 1
        elif health is False:
            unhealthy[group] = unhealthy.get(group, 0) + 1
        if not is_live(alloc):
            continue
        live[group] = live.get(group, 0) + 1
        canary = alloc.deployment_status.canary or alloc.id in promoted_canaries
        if canary:
            canaries.setdefault(group, []).append(alloc.id)
            if health is True:
                healthy_canaries[group] = healthy_canaries.get(group, 0) + 1
    return {
        group: GroupTally(
            placed=n,
            canaries=tuple(sorted(canaries.get(group, ()))),
            healthy=healthy.get(group, 0),
            unhealthy=unhealthy.get(group, 0),
            healthy_canaries=healthy_canaries.get(group, 0),
            first_placed=first.get(group),
            live=live.get(group, 0),
        )
        for group, n in placed.items()
    }


def has_canaries(group: deployment_pb2.DeploymentGroupState) -> bool:
    return group.desired_canaries > 0


def promotion_done(group: deployment_pb2.DeploymentGroupState) -> bool:
    """No canaries to promote, or they were promoted: the rollout may proceed."""
    return not has_canaries(group) or group.promoted


def group_complete(group: deployment_pb2.DeploymentGroupState) -> bool:
    """Every desired allocation healthy, after promotion where there are canaries."""
    return promotion_done(group) and group.healthy_allocs >= group.desired_total


def awaiting_promotion(group: deployment_pb2.DeploymentGroupState) -> bool:
    """All canaries healthy, the group waits for someone to promote it."""
    return (
        has_canaries(group)
        and not group.promoted
        and group.healthy_allocs >= group.desired_canaries
    )


def deployment_complete(deployment: deployment_pb2.Deployment) -> bool:
    groups = deployment.task_groups.values()
    return bool(groups) and all(group_complete(g) for g in groups)

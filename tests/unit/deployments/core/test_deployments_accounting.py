"""Health accounting per task group, from allocations' deployment status."""

from __future__ import annotations

from deployments_builders import G, alloc, deployment

from drover.deployments.core.accounting import (
    GroupTally,
    awaiting_promotion,
    deployment_complete,
    group_complete,
    health_of,
    tally,
)


def test_health_is_unknown_until_set() -> None:
    assert health_of(alloc("a")) is None
    assert health_of(alloc("a", healthy=True)) is True
    assert health_of(alloc("a", healthy=False)) is False


def test_tally_counts_per_group() -> None:
    allocs = [
        alloc("w1", healthy=True),
        alloc("w2", healthy=False),
        alloc("w3"),
        alloc("c2", healthy=True, canary=True),
        alloc("c1", canary=True),
        alloc("a1", group="api", healthy=True),
    ]
    assert tally(allocs) == {
        "web": GroupTally(placed=5, canaries=("c1", "c2"), healthy=2, unhealthy=1,
                          healthy_canaries=1, live=5),
        "api": GroupTally(placed=1, canaries=(), healthy=1, unhealthy=0, healthy_canaries=0,
                          live=1),
    }


def test_tally_of_nothing_is_empty() -> None:
    assert tally([]) == {}


def test_group_complete_needs_promotion_where_there_are_canaries() -> None:
    d = deployment(groups={"web": G(total=2, canaries=1)})
    g = d.task_groups["web"]
    g.healthy_allocs = 2
    assert not group_complete(g)
    assert awaiting_promotion(g)
    g.promoted = True
    assert group_complete(g)
    assert not awaiting_promotion(g)


def test_deployment_complete_needs_every_group() -> None:
    d = deployment(groups={"web": G(total=2), "api": G(total=1)})
    d.task_groups["web"].healthy_allocs = 2
    assert not deployment_complete(d)
    d.task_groups["api"].healthy_allocs = 1
    assert deployment_complete(d)


def test_a_deployment_without_groups_is_not_complete() -> None:
    assert not deployment_complete(deployment(groups={}))

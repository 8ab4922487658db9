"""Allocation lifecycle in the accounting: the stored counters accumulate
as Nomad's ``updateDeploymentWithAlloc`` (every placement, every health
report, whatever became of the allocation); canaries, promotion and
failure look only at live allocations, as Nomad's watcher and promotion
rules treat stopped, completed, lost and failed-then-replaced ones.
Updated to Nomad's rule (was: only live allocations counted)."""

from __future__ import annotations

import pytest
from deployments_builders import SUCCESSFUL, T0, G, alloc, deployment, job

from drover.api.types.v1 import allocation_pb2
from drover.deployments.core.accounting import GroupTally, is_live, tally
from drover.deployments.core.watcher import DeploymentWatcher
from drover.deployments.errors import CanariesUnhealthy

STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
EVICT = allocation_pb2.ALLOC_DESIRED_STATUS_EVICT
UNSET = allocation_pb2.ALLOC_DESIRED_STATUS_UNSPECIFIED
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
LOST = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
PENDING = allocation_pb2.ALLOC_CLIENT_STATUS_PENDING


def stopped(a: allocation_pb2.Allocation, desired: int = STOP,
            client: int = COMPLETE) -> allocation_pb2.Allocation:
    a.desired_status = desired  # type: ignore[assignment]
    a.client_status = client  # type: ignore[assignment]
    return a


def replacing(a: allocation_pb2.Allocation, previous: str) -> allocation_pb2.Allocation:
    a.previous_allocation = previous
    return a


def watcher(groups: dict[str, G], allocs: list[allocation_pb2.Allocation]) -> DeploymentWatcher:
    return DeploymentWatcher(deployment(groups=groups), [job(2, groups=groups)], allocs)


@pytest.mark.parametrize(("desired", "client", "live"), [
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, True),
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, PENDING, True),
    (UNSET, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, True),  # proto3 unset reads as RUN
    (STOP, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, False),  # being stopped
    (EVICT, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, False),
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, COMPLETE, False),
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, FAILED, False),
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, LOST, False),
])
def test_live_means_meant_to_run_and_not_client_terminal(desired: int, client: int,
                                                         live: bool) -> None:
    assert is_live(stopped(alloc("a"), desired, client)) is live


@pytest.mark.parametrize(("desired", "client"), [
    (STOP, COMPLETE), (STOP, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING), (EVICT, COMPLETE),
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, COMPLETE),
    (allocation_pb2.ALLOC_DESIRED_STATUS_RUN, LOST),
])
@pytest.mark.parametrize("healthy", [True, False, None])
def test_stopped_completed_and_lost_allocations_stay_counted_but_not_as_canaries(
        desired: int, client: int, healthy: bool | None) -> None:
    gone = stopped(alloc("c", healthy=healthy, canary=True), desired, client)
    assert tally([gone, alloc("w", healthy=True)]) == {
        "web": GroupTally(placed=2, healthy=1 + (healthy is True),
                          unhealthy=int(healthy is False), live=1)}


def test_a_group_with_only_terminal_allocations_keeps_its_counts() -> None:
    assert tally([stopped(alloc("a", healthy=True))]) == {"web": GroupTally(placed=1, healthy=1)}


def test_placements_and_health_reports_accumulate() -> None:
    """The issue's case: 5 placements, 4 unhealthy reports (each replaced
    by the next) show Placed 5 Unhealthy 4, not 1 and 0."""
    chain = [stopped(alloc(f"a{i}", healthy=False), STOP, COMPLETE) for i in range(4)]
    chain = [replacing(a, f"a{i - 1}") if i else a for i, a in enumerate(chain)]
    last = replacing(alloc("a4"), "a3")
    assert tally([*chain, last]) == {"web": GroupTally(placed=5, unhealthy=4, live=1)}


def test_failed_unhealthy_stays_unhealthy_when_replaced() -> None:
    failed = stopped(alloc("f", healthy=False), allocation_pb2.ALLOC_DESIRED_STATUS_RUN, FAILED)
    assert tally([failed]) == {"web": GroupTally(placed=1, unhealthy=1)}
    replacement = replacing(alloc("r"), "f")
    assert tally([failed, replacement]) == {"web": GroupTally(placed=2, unhealthy=1, live=1)}


def test_failed_after_being_healthy_stays_healthy() -> None:
    failed = stopped(alloc("f", healthy=True), allocation_pb2.ALLOC_DESIRED_STATUS_RUN, FAILED)
    assert tally([failed]) == {"web": GroupTally(placed=1, healthy=1)}


def test_promoted_canaries_count_as_canaries_without_the_flag() -> None:
    allocs = [alloc("c1", healthy=True), alloc("c2", healthy=True, canary=True), alloc("w")]
    assert tally(allocs, promoted_canaries={"c1", "gone"}) == {
        "web": GroupTally(placed=3, canaries=("c1", "c2"), healthy=2, healthy_canaries=2,
                          live=3)}


# -- promotion (the two scenarios) -------------------------------------


def test_promotion_with_a_stopped_healthy_canary_counts_zero_of_two() -> None:
    groups = {"web": G(total=3, canaries=2)}
    w = watcher(groups, [stopped(alloc("c1", healthy=True, canary=True)),
                         alloc("c2", canary=True)])
    with pytest.raises(CanariesUnhealthy) as err:
        w.promote(None, T0)
    assert str(err.value) == "task group web has 0/2 healthy canaries"


def test_promotion_with_only_a_stopped_healthy_canary_is_refused() -> None:
    groups = {"web": G(total=2, canaries=1)}
    w = watcher(groups, [stopped(alloc("c1", healthy=True, canary=True))])
    with pytest.raises(CanariesUnhealthy) as err:
        w.promote(["web"], T0)
    assert str(err.value) == "task group web has 0/1 healthy canaries"
    assert not w.deployment.task_groups["web"].promoted


def test_no_auto_promotion_on_a_stopped_healthy_canary() -> None:
    groups = {"web": G(total=2, canaries=1, auto_promote=True)}
    w = watcher(groups, [])
    w.on_alloc(alloc("c1", healthy=True, canary=True, modify_index=2), T0)
    assert w.deployment.task_groups["web"].promoted  # the live one promotes...
    groups_fresh = {"web": G(total=2, canaries=1, auto_promote=True)}
    w2 = watcher(groups_fresh, [])
    d = w2.on_alloc(stopped(alloc("c1", healthy=True, canary=True, modify_index=2)), T0)
    assert not w2.deployment.task_groups["web"].promoted  # ...the stopped one does not
    assert d.follow_up is None


def test_a_stopped_canary_leaves_placed_canaries() -> None:
    groups = {"web": G(total=3, canaries=2)}
    w = watcher(groups, [alloc("c1", canary=True), alloc("c2", canary=True)])
    w.reconcile(T0)
    assert list(w.deployment.task_groups["web"].placed_canaries) == ["c1", "c2"]
    w.on_alloc(stopped(alloc("c1", canary=True, modify_index=3)), T0)
    g = w.deployment.task_groups["web"]
    assert list(g.placed_canaries) == ["c2"] and g.placed_allocs == 2


def test_after_promotion_cleared_flags_keep_the_canaries_listed() -> None:
    groups = {"web": G(total=2, canaries=1)}
    w = watcher(groups, [alloc("c1", healthy=True, canary=True)])
    w.promote(None, T0)
    # The state service clears the flag with the promotion; the echo arrives.
    w.on_alloc(alloc("c1", healthy=True, canary=False, modify_index=5), T0)
    g = w.deployment.task_groups["web"]
    assert g.promoted and list(g.placed_canaries) == ["c1"] and g.healthy_allocs == 1
    # A promoted canary that is then stopped leaves the list, not the counts.
    w.on_alloc(stopped(alloc("c1", healthy=True, modify_index=6)), T0)
    g = w.deployment.task_groups["web"]
    assert list(g.placed_canaries) == [] and g.healthy_allocs == 1 and g.placed_allocs == 1


# -- healthy totals and failure ------------------------------------------------


def test_a_stopped_healthy_allocation_counts_toward_completion() -> None:
    """Nomad's deploymentComplete reads the accumulated HealthyAllocs: a
    healthy report counts though its allocation was stopped since. Was: it
    did not complete the deployment."""
    groups = {"web": G(total=2)}
    w = watcher(groups, [alloc("a", healthy=True), stopped(alloc("b", healthy=True))])
    w.reconcile(T0)
    assert w.deployment.task_groups["web"].healthy_allocs == 2
    assert w.deployment.status == SUCCESSFUL


def test_a_stopped_unhealthy_allocation_does_not_fail_the_deployment() -> None:
    w = watcher({"web": G(total=2)}, [stopped(alloc("a", healthy=False))])
    decision = w.reconcile(T0)
    assert w.active and decision.revert is None
    assert w.deployment.task_groups["web"].unhealthy_allocs == 1  # the report counts


def test_a_lost_allocation_does_not_fail_the_deployment() -> None:
    lost = stopped(alloc("a", healthy=False), allocation_pb2.ALLOC_DESIRED_STATUS_RUN, LOST)
    w = watcher({"web": G(total=2)}, [lost])
    w.reconcile(T0)
    assert w.active


def test_a_failed_unhealthy_allocation_fails_the_deployment() -> None:
    failed = stopped(alloc("a", healthy=False), allocation_pb2.ALLOC_DESIRED_STATUS_RUN, FAILED)
    w = watcher({"web": G(total=2)}, [failed])
    w.reconcile(T0)
    assert not w.active
    assert w.deployment.task_groups["web"].unhealthy_allocs == 1


def test_a_replaced_failed_allocation_does_not_fail_the_deployment() -> None:
    failed = stopped(alloc("a", healthy=False), allocation_pb2.ALLOC_DESIRED_STATUS_RUN, FAILED)
    w = watcher({"web": G(total=2)}, [failed, replacing(alloc("b"), "a")])
    w.reconcile(T0)
    assert w.active
    assert w.deployment.task_groups["web"].unhealthy_allocs == 1  # the report counts

"""The manager: routing wakes only owners, batching across deployments, timers, stats."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from deployments_builders import FAILED, PAUSED, SUCCESSFUL, T0, G, alloc, deployment, eval_ids, job
from virtual_clock import VirtualClock

from drover.deployments.config import BatcherConfig
from drover.deployments.core.effects import DeploymentUpdate
from drover.deployments.core.manager import AllocationChange, WatcherManager, WatcherStats
from drover.deployments.errors import DeploymentNotFound
from drover.errors import NotFound


def manager(clock: VirtualClock, *ids: str, groups: dict[str, G] | None = None) -> WatcherManager:
    m = WatcherManager(clock, BatcherConfig(window=0.25), new_id=eval_ids())
    for deployment_id in ids:
        m.track(deployment(deployment_id, groups=groups), [job(2, groups=groups)])
    return m


def test_an_allocation_wakes_only_its_own_watcher() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", "d2", "d3")
    d = m.on_allocation(alloc("a1", deployment_id="d2"))
    assert d is not None and d.deployment_id == "d2"
    assert [m.wakeups(x) for x in ("d1", "d2", "d3")] == [0, 1, 0]
    a = alloc("a1", deployment_id="d2")
    a.client_description = "noise"
    assert m.on_allocation(a) is None  # nothing that matters changed
    assert m.on_allocation(alloc("x", deployment_id="elsewhere")) is None
    assert m.stats().wakeups == 1 and m.stats().ignored_alloc_updates == 2


def test_a_follow_up_is_written_with_the_deployment_change_that_needs_it() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", "d2", "d3", groups={"web": G(total=5)})
    for i, deployment_id in enumerate(("d1", "d2", "d3")):
        d = m.on_allocation(alloc(f"a{i}", deployment_id=deployment_id, healthy=True))
        # One decision, one write: the new healthy count and its evaluation.
        assert d is not None and d.update is not None and d.follow_up is None
        assert d.evaluation is not None and d.evaluation.deployment_id == deployment_id
        assert d.evaluation.triggered_by == "deployment-watcher"
        assert d.evaluation_follows_up  # the writer may batch it (coalesce.hold_for)
        clock.advance(0.05)
    # Nothing waits in memory for a later write.
    assert m.next_wakeup() is not None and m.flush_evaluations() == ()
    clock.advance(1)
    assert m.flush_evaluations() == ()
    s = m.stats()
    assert (s.evaluations_created, s.pending_evaluations, s.evaluation_batches) == (3, 0, 0)


def test_next_wakeup_is_the_earliest_deadline() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", "d2")
    assert m.next_wakeup() is None
    m.on_allocation(alloc("a1", deployment_id="d2"))
    clock.advance(10)
    m.on_allocation(alloc("b1", deployment_id="d1"))
    assert m.next_wakeup() == pytest.approx(clock.now - 10 + 600)


def test_check_deadlines_fails_only_the_late_deployment_and_drops_it() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", "d2")
    m.on_allocation(alloc("a1", deployment_id="d1"))
    clock.advance(300)
    m.on_allocation(alloc("b1", deployment_id="d2"))
    clock.advance(300)
    decisions = m.check_deadlines()
    assert [d.deployment_id for d in decisions] == ["d1"]
    assert decisions[0].update is not None and decisions[0].update.status == FAILED
    assert m.tracked() == frozenset({"d2"})
    assert m.stats().evaluations_created == 1


def test_paused_deployments_survive_their_deadline() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1")
    m.on_allocation(alloc("a1", deployment_id="d1"))
    m.pause("d1", True)
    clock.advance(10_000)
    assert m.check_deadlines() == []
    assert m.next_wakeup() is None
    assert m.tracked() == frozenset({"d1"})


def test_terminal_deployment_events_drop_the_watcher() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1")
    m.on_allocation(alloc("a1", deployment_id="d1"))
    assert m.on_deployment(deployment("d1", status=SUCCESSFUL, modify_index=9)).empty
    assert m.tracked() == frozenset()
    assert m.on_allocation(alloc("a2", deployment_id="d1")) is None


def test_wants_tells_the_shell_what_to_track() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1")
    assert not m.wants(deployment("d1"))
    assert m.wants(deployment("d2", status=PAUSED))
    assert not m.wants(deployment("d3", status=FAILED))
    assert m.on_deployment(deployment("d2")).empty  # unknown: the shell must track it
    assert m.track(deployment("d3", status=FAILED), [job(2)]).empty
    assert m.tracked() == frozenset({"d1"})


def test_deleted_allocations_reach_their_watcher() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1")
    m.on_allocation(alloc("a1", deployment_id="d1", healthy=True))
    d = m.on_allocation_deleted("a1")
    assert d is not None and d.update is not None and d.update.groups[0].healthy_allocs == 0
    assert m.on_allocation_deleted("a1") is None


@pytest.mark.parametrize(
    "operation",
    [
        lambda m: m.promote("nope"),
        lambda m: m.pause("nope", True),
        lambda m: m.fail("nope"),
        lambda m: m.set_alloc_health("nope", ["a"], []),
    ],
)
def test_operations_on_unwatched_deployments_are_not_found(
        operation: Callable[[WatcherManager], object]) -> None:
    m = manager(VirtualClock(T0), "d1")
    with pytest.raises(DeploymentNotFound) as err:
        operation(m)
    assert isinstance(err.value, NotFound)
    assert err.value.reason == "DEPLOYMENT_NOT_FOUND"
    assert err.value.message == "deployment nope is not watched (unknown or not active)"


def test_manual_fail_drops_the_watcher_and_leaves_no_follow_up_behind() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", groups={"web": G(total=3)})
    progress = m.on_allocation(alloc("a1", deployment_id="d1", healthy=True))
    assert progress is not None and progress.evaluation is not None  # in its write
    assert m.stats().pending_evaluations == 0
    d = m.fail("d1")
    assert d.evaluation is not None
    assert m.stats().pending_evaluations == 0 and m.tracked() == frozenset()


def test_clear_forgets_every_watcher_on_leadership_loss_but_keeps_counters() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", "d2", groups={"web": G(total=3)})
    m.on_allocation(alloc("a1", deployment_id="d1"))
    m.clear()
    assert m.wakeups("d1") == 0
    assert m.stats() == WatcherStats(
        active_watchers=0,
        subscriptions=2,
        wakeups=1,
        ignored_alloc_updates=0,
        evaluations_created=0,
        evaluations_coalesced=0,
        evaluation_batches=0,
        pending_evaluations=0,
    )


def test_promotions_and_outcomes_are_counted_once_each() -> None:
    clock = VirtualClock(T0)
    groups = {"web": G(total=2, canaries=1)}
    m = WatcherManager(clock, BatcherConfig(window=0.25), new_id=eval_ids())
    m.track(deployment("d1", groups=groups), [job(2, groups=groups)])
    m.on_allocation(alloc("c1", deployment_id="d1", canary=True, healthy=True))
    m.promote("d1")
    # Later decisions carry the group as promoted again: not a new promotion.
    m.on_allocation(alloc("a1", deployment_id="d1", healthy=True))  # canary + a1: done
    s = m.stats()
    assert s.promotions == 1
    assert (s.failures, s.successes) == (0, 1)
    m.track(deployment("d2"), [job(2)])
    m.fail("d2")
    assert (m.stats().failures, m.stats().successes) == (1, 1)


def test_a_stream_response_steps_each_woken_watcher_once() -> None:
    clock = VirtualClock(T0)
    groups = {"web": G(total=5)}
    batched, one_by_one = manager(clock, "d1", "d2", groups=groups), manager(
        clock, "d1", "d2", groups=groups)
    changes: list[AllocationChange] = [
        (False, alloc(f"a{i}", deployment_id="d1", healthy=True)) for i in range(4)]
    changes += [(False, alloc("b1", deployment_id="d2")), (True, "a0"),
                (False, alloc("x", deployment_id="elsewhere"))]
    decisions = batched.on_allocations(changes)
    # One decision per woken deployment, in the order they were first woken.
    assert [d.deployment_id for d in decisions] == ["d1", "d2"]
    last: dict[str, object] = {}
    for deleted, payload in changes:
        d = (one_by_one.on_allocation_deleted(payload) if deleted
             else one_by_one.on_allocation(payload))
        if d is not None and not d.empty:
            last[d.deployment_id] = d.update
    # The batch's step ends where the per-change steps end: 3 placed, 3 healthy.
    d1, per_change = decisions[0].update, last["d1"]
    assert d1 is not None and isinstance(per_change, DeploymentUpdate)
    assert [(g.placed_allocs, g.healthy_allocs) for g in d1.groups] == [(3, 3)]
    assert [(g.placed_allocs, g.healthy_allocs) for g in per_change.groups] == [(3, 3)]
    assert batched.stats().wakeups == one_by_one.stats().wakeups == 6


def test_changes_taken_over_a_tick_step_each_watcher_once() -> None:
    clock = VirtualClock(T0)
    m = manager(clock, "d1", "d2", groups={"web": G(total=5)})
    m.take_allocations([(False, alloc("a1", deployment_id="d1"))])
    m.take_allocations([(False, alloc("a2", deployment_id="d1")),
                        (False, alloc("b1", deployment_id="d2"))])
    m.take_allocations([(False, alloc("a1", deployment_id="d1", healthy=True))])
    decisions = m.step_woken()
    assert [d.deployment_id for d in decisions] == ["d1", "d2"]
    d1 = decisions[0].update
    assert d1 is not None and [(g.placed_allocs, g.healthy_allocs) for g in d1.groups] == [(2, 1)]
    assert m.step_woken() == []  # nothing taken since

"""EndpointHealth: the pure decisions behind the etcd endpoint pool, on a
virtual clock (``now`` is a plain float the test advances)."""

from __future__ import annotations

import random

import pytest

from drover.coord.endpoints import EndpointHealth, HealthConfig

EPS = ("a:1", "b:1", "c:1")
CFG = HealthConfig(probe_interval=0.25, idle_probe_interval=1.0, probe_timeout=0.5,
                   request_bound=0.5, hold_down=2.0)


def health(seed: int = 7) -> EndpointHealth:
    return EndpointHealth(EPS, rng=random.Random(seed), config=CFG)


def test_order_is_a_random_permutation_per_process() -> None:
    orders = {tuple(EndpointHealth(EPS, rng=random.Random(s)).order) for s in range(40)}
    assert all(sorted(o) == sorted(EPS) for o in orders)
    assert len(orders) == 6  # every permutation shows up: processes spread out
    firsts = [EndpointHealth(EPS, rng=random.Random(s)).current for s in range(300)]
    assert {firsts.count(ep) for ep in EPS} != {300}
    assert min(firsts.count(ep) for ep in EPS) > 60


def test_bad_current_moves_to_the_next_good_one_at_once() -> None:
    h = health()
    first, second = h.order[0], h.order[1]
    assert h.current == first
    assert h.probe_failed(first, 10.0, "probe: DEADLINE_EXCEEDED") == second
    assert h.current == second and h.switches == 1
    assert h.reason(first) == "probe: DEADLINE_EXCEEDED"


def test_a_bad_mark_on_another_endpoint_does_not_move() -> None:
    h = health()
    assert h.mark_bad(h.order[2], 1.0, "x") is None
    assert h.current == h.order[0]


def test_moves_back_to_the_preferred_member_after_the_hold_down() -> None:
    h = health()
    first, second = h.order[0], h.order[1]
    h.mark_bad(first, 10.0, "frozen")
    assert h.current == second
    # Answers again, but within the hold-down: stay where we are.
    assert h.probe_ok(first, 11.0) is None
    assert h.current == second and not h.good(first)
    # A failure restarts the hold-down.
    h.probe_failed(first, 11.5, "flap")
    assert h.probe_ok(first, 13.0) is None
    assert h.probe_ok(first, 13.6) == first
    assert h.current == first and h.good(first) and h.reason(first) == ""


def test_all_bad_stays_put() -> None:
    h = health()
    cur = h.current
    for ep in reversed(h.order):  # the one in use last
        h.probe_failed(ep, 5.0, "probe: member has no leader")
    assert h.current == cur and h.switches == 0
    assert h.bad() == h.order


def test_frozen_current_moves_to_a_recovering_member_without_waiting_the_hold_down() -> None:
    # SIGSTOP of the etcd leader: the others say "no leader" until they elect.
    h = health()
    first, second, third = h.order
    h.probe_failed(second, 1.0, "probe: member has no leader")
    h.probe_failed(third, 1.0, "probe: member has no leader")
    assert h.probe_failed(first, 1.2, "probe: DEADLINE_EXCEEDED") is None  # all bad: stay
    # The third member has a leader again; it is held down but answers well.
    assert h.probe_ok(third, 2.1) == third
    assert h.recovering(third) and not h.good(third)
    # Once there, the second recovering does not bounce it...
    assert h.probe_ok(second, 2.2) is None
    # ...but the preferred order wins once marks clear after the hold-down.
    assert h.probe_ok(second, 3.3) == second


def test_recovering_current_is_not_left_for_another_recovering_one() -> None:
    h = health()
    first, second, _ = h.order
    for ep in h.order:
        h.mark_bad(ep, 1.0, "x")
    h.probe_ok(first, 1.5)
    assert h.recovering(first)
    assert h.probe_ok(second, 1.6) is None
    assert h.current == first


def test_probe_schedule_fast_for_current_slow_for_the_others() -> None:
    h = health()
    assert set(h.due(0.0)) == set(EPS)
    for ep in EPS:
        h.probe_started(ep, 0.0)
    assert h.due(0.0) == [] and h.next_due() == float("inf")
    for ep in EPS:
        h.probe_ok(ep, 0.1)
    assert h.due(0.3) == []
    assert h.due(0.4) == [h.current]
    assert set(h.due(1.1)) == set(EPS)
    assert h.next_due() == pytest.approx(0.35)


def test_suspect_makes_an_endpoint_due_now() -> None:
    h = health()
    for ep in EPS:
        h.probe_started(ep, 0.0)
        h.probe_ok(ep, 0.0)
    other = h.order[1]
    assert other not in h.due(0.1)
    h.suspect(other, 0.1)
    assert other in h.due(0.1)


def test_invalid_input() -> None:
    with pytest.raises(ValueError):
        EndpointHealth(())
    with pytest.raises(ValueError):
        EndpointHealth(("a:1", "a:1"))
    with pytest.raises(ValueError):
        HealthConfig(probe_timeout=0)


def test_update_adds_held_down_endpoints_and_drops_gone_ones() -> None:
    h = health()
    cur = h.current
    others = [ep for ep in h.order if ep != cur]
    added, removed = h.update([cur, others[0], "d:1"], 10.0)
    assert (added, removed) == (["d:1"], [others[1]])
    assert sorted(h.order) == sorted([cur, others[0], "d:1"])
    assert h.current == cur  # nothing in use went away
    # The newcomer is due for a probe, and not good until it answers.
    assert "d:1" in h.due(10.0) and not h.good("d:1")
    h.probe_started("d:1", 10.0)
    h.probe_ok("d:1", 10.1)
    assert h.good("d:1")


def test_update_moves_off_an_endpoint_that_no_longer_resolves() -> None:
    h = health()
    cur, nxt, _ = h.order
    h.update([ep for ep in EPS if ep != cur], 1.0)
    assert h.current == nxt and h.switches == 1


def test_update_with_nothing_resolving_keeps_what_it_has() -> None:
    h = health()
    assert h.update([], 1.0) == ([], [])
    assert sorted(h.order) == sorted(EPS)

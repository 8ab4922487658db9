"""ReplicaChooser: every replica, round-robin, failed ones held down, seeds as fallback."""

from __future__ import annotations

from collections import Counter

from virtual_clock import VirtualClock

from drover.rpc.replicas import ReplicaChooser


def test_seeds_until_membership_lists_replicas_then_membership_only() -> None:
    c = ReplicaChooser(["seed:1", "seed:1", ""], clock=lambda: 0.0)
    assert c.addresses == ("seed:1",)
    assert c.pick() == "seed:1"
    c.set_members(["b:2", "a:1"])
    assert c.addresses == ("a:1", "b:2")  # the seed is an override only while none
    assert {c.pick() for _ in range(4)} == {"a:1", "b:2"}
    c.set_members([])
    assert c.addresses == ("seed:1",)
    assert ReplicaChooser(clock=lambda: 0.0).pick() is None


def test_calls_spread_over_every_replica_and_skip_held_down_ones() -> None:
    now = VirtualClock(0.0)
    c = ReplicaChooser(clock=now, hold_down=2.0)
    c.set_members(["a:1", "b:2", "c:3"])
    assert Counter(c.pick() for _ in range(30)) == {"a:1": 10, "b:2": 10, "c:3": 10}
    c.failed("b:2")
    assert {c.pick() for _ in range(10)} == {"a:1", "c:3"}
    assert c.order()[-1] == "b:2"  # a read tries the held-down one last
    now.now = 2.5  # the hold ends: it is tried again
    assert "b:2" in {c.pick() for _ in range(10)}
    c.failed("a:1")
    c.succeeded("a:1")
    assert "a:1" in {c.pick() for _ in range(10)}


def test_when_every_replica_is_held_down_the_first_to_recover_is_tried() -> None:
    now = VirtualClock(0.0)
    c = ReplicaChooser(clock=now, hold_down=2.0)
    c.set_members(["a:1", "b:2"])
    c.failed("a:1")
    now.now = 1.0
    c.failed("b:2")
    assert c.pick() == "a:1"
    assert c.order() == ["a:1", "b:2"]
    c.failed("gone:9")  # not a replica: ignored
    c.set_members(["b:2"])  # a replica that left takes its hold with it
    assert c.addresses == ("b:2",) and c.pick() == "b:2"

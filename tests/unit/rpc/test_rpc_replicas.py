"""ReplicaChooser: every replica, round-robin, failed ones held down, seeds as fallback;
ReplicaPool.discover: membership at start, UNAVAILABLE when no replica is known."""

from __future__ import annotations

from collections import Counter

import pytest
from virtual_clock import VirtualClock

from drover.config import ServeSettings
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.coord.membership import Member
from drover.coord.memkv import MemoryKV
from drover.errors import Unavailable
from drover.rpc.replicas import ReplicaChooser, state_replicas


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


async def test_discover_learns_membership_and_is_unavailable_when_no_replica_is_known() -> None:
    keyspace = Keyspace("/drover")
    kv = MemoryKV()
    member = Member(service="state", replica="s0", address="s0:7100", rpc_version=1)
    empty = state_replicas(ServeSettings("broker"), lambda: "")
    with pytest.raises(Unavailable, match="no --state-address and none registered"):
        await empty.discover(kv, keyspace)
    with pytest.raises(Unavailable):
        await empty.discover(None, keyspace)
    seeded = state_replicas(ServeSettings("broker", state_addresses=("seed:1",)), lambda: "")
    await seeded.discover(None, keyspace)  # no etcd: the seeds
    assert seeded.chooser.addresses == ("seed:1",)
    await kv.txn([], [Put(keyspace.member("state", "s0").encode(), member.to_json())])
    await seeded.discover(kv, keyspace)
    assert seeded.chooser.addresses == ("s0:7100",)
    await seeded.close()


async def test_a_silent_replica_is_left_within_the_hold() -> None:
    """A replica that neither answers nor fails (frozen) and does not answer
    the ping: a read moves on to the next replica, a write is
    OUTCOME_UNKNOWN, both within about the hold (not the call's 10 s), and
    the silent replica is held down. A live one answering the ping keeps a
    long call."""
    import asyncio
    import time

    from drover.rpc.hold import HoldOutcomeUnknown
    from drover.rpc.replicas import ReplicaPool

    alive = {"a:1": False, "b:1": True}

    async def probe(address: str, within: float) -> bool:
        if not alive[address]:
            await asyncio.sleep(within)  # a frozen process: no answer
        return alive[address]

    pool = ReplicaPool("state", lambda ch: ch, ("a:1", "b:1"), dial=lambda a: a,  # type: ignore[arg-type,return-value]
                       hold=0.4, probe=probe)

    async def call(stub: str) -> str:
        if stub == "a:1":
            await asyncio.sleep(10)  # the call's own deadline: never reached
        return stub

    for _ in range(2):  # whichever replica is picked first
        t0 = time.monotonic()
        assert await pool.read(call) == "b:1"
        assert time.monotonic() - t0 < 1.5
    pool.succeeded("a:1")
    pool.chooser.failed("b:1")  # the write goes to a:1
    t0 = time.monotonic()
    with pytest.raises(HoldOutcomeUnknown):
        await pool.once(call)
    assert time.monotonic() - t0 < 1.5
    assert pool.chooser.pick() == "b:1"  # a:1 held down after its silence

    async def slow_but_alive(stub: str) -> str:
        await asyncio.sleep(1.0)  # longer than the hold; its replica answers pings
        return stub

    pool.succeeded("a:1")
    pool.succeeded("b:1")
    alive["a:1"] = True
    assert await pool.read(slow_but_alive) in ("a:1", "b:1")
    await pool.holds.close()

"""Session, Election, Leadership, watch and membership on :class:`MemoryKV`:
the coord components are the real ones, only etcd is the in-memory twin,
and lease expiry follows the one virtual clock (``tests/virtual_clock.py``).

Time: a lease's TTL and its renewals are virtual; only the sessions'
keepalive loops sleep for real (TTL/6 of a second per round at most, the
TTLs here are 1-2 s), so every wait below is bounded by :data:`BOUND`."""

from __future__ import annotations

import asyncio

import pytest
from polling import eventually
from virtual_clock import VirtualClock

from drover.coord.election import Election, observe
from drover.coord.errors import FenceLost, NotCandidate, SessionLost
from drover.coord.fence import fenced_txn
from drover.coord.guard import LeaderGuard
from drover.coord.keys import Keyspace
from drover.coord.kv import Delete, Put, prefix_end
from drover.coord.leadership import Leadership, LeadershipConfig
from drover.coord.membership import Member, Registration, list_members
from drover.coord.memkv import MemoryKV
from drover.coord.session import Session
from drover.coord.term import Term
from drover.coord.watch import ResilientWatch, WatchConfig
from drover.coord.watch_buffer import Batch, Resync
from drover.errors import NotLeader

KS = Keyspace("/mem/drover")
BOUND = 10.0  # seconds any one wait may take on a loaded machine


class Recorder:
    """A leader component that records its calls and guards like the broker."""

    def __init__(self, clock: VirtualClock) -> None:
        self.calls: list[str] = []
        self.guard = LeaderGuard("svc", clock=clock)

    async def establish(self, term: Term) -> None:
        self.calls.append(f"establish {term.revision}")
        self.guard.enable(term)

    async def revoke(self) -> None:
        self.calls.append("revoke")
        self.guard.disable()


# ---- Session


async def test_a_session_renews_its_lease_on_the_virtual_clock(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    session = await Session.open(kv, 1, clock=clock)
    try:
        await kv.txn([], [Put(b"/k", b"v", lease=session.lease_id)])
        assert session.expires_at == 1.0
        clock.advance(0.5)  # past a renew interval (TTL/6): the next round renews
        await eventually(lambda: session.expires_at == 1.5, BOUND)
        clock.advance(0.6)  # 1.1: past the granted TTL, within the renewal's
        assert kv.expire_leases() == []
        # act_until = renewal sent at 0.5 + 2/3 of the TTL
        assert session.safe(clock()) and not session.lost.is_set()
        assert not session.safe(0.5 + 2 / 3)
        assert len((await kv.range(b"/k", b"")).kvs) == 1
    finally:
        await session.close()
    # close revoked the lease: its key went with it
    assert (await kv.range(b"/k", b"")).kvs == []


async def test_an_unrenewed_lease_expires_and_the_session_is_lost(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    session = await Session.open(kv, 2, clock=clock)
    try:
        clock.advance(2.5)  # frozen past the TTL: no renewal could run
        # the synchronous check knows before the keepalive task has run
        assert not session.safe(clock())
        assert kv.expire_leases() == [session.lease_id]
        await eventually(session.lost.is_set, BOUND)
        assert session.lost_reason.startswith("no renewal within TTL")
        with pytest.raises(SessionLost):
            session.check()
    finally:
        await session.close()


async def test_a_lease_revoked_elsewhere_ends_the_session(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    session = await Session.open(kv, 1, clock=clock)
    try:
        await kv.lease_revoke(session.lease_id)
        clock.advance(0.2)  # the next keepalive is answered "gone"
        await eventually(session.lost.is_set, BOUND)
        assert session.lost_reason == "lease is gone (keepalive TTL <= 0)"
    finally:
        await session.close()


# ---- Election


async def test_the_next_candidate_wins_when_the_leader_resigns(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    sa, sb = await Session.open(kv, 60, clock=clock), await Session.open(kv, 60, clock=clock)
    try:
        a = Election(kv, KS, "svc", sa, address="a:1")
        b = Election(kv, KS, "svc", sb, address="b:1")
        term_a = await a.campaign()
        waiting = asyncio.ensure_future(b.campaign())
        await eventually(lambda: b.create_revision > 0, BOUND)
        assert not waiting.done()
        info = await observe(kv, KS, "svc")
        assert info is not None and (info.address, info.term) == ("a:1", term_a.revision)
        assert await a.resign(term_a)
        term_b = await asyncio.wait_for(waiting, BOUND)
        assert term_b.revision > term_a.revision
        assert term_b.won_at_revision >= term_b.revision
        assert await b.mark_established(term_b)
        info = await observe(kv, KS, "svc")
        assert info is not None and info.address == "b:1" and info.established
    finally:
        await sa.close()
        await sb.close()
    assert await observe(kv, KS, "svc") is None  # the leases took the keys


async def test_a_waiting_candidate_whose_key_vanishes_never_wins(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    sa, sb = await Session.open(kv, 60, clock=clock), await Session.open(kv, 60, clock=clock)
    try:
        a = Election(kv, KS, "svc", sa, address="a:1")
        b = Election(kv, KS, "svc", sb, address="b:1")
        await a.campaign()
        waiting = asyncio.ensure_future(b.campaign())
        await eventually(lambda: b.create_revision > 0, BOUND)
        await kv.txn([], [Delete(b.key.encode())])
        with pytest.raises(NotCandidate):
            await asyncio.wait_for(waiting, BOUND)
    finally:
        await sa.close()
        await sb.close()


async def test_campaigning_on_a_lease_already_gone_is_a_lost_session(
        clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    session = await Session.open(kv, 60, clock=clock)
    try:
        await kv.lease_revoke(session.lease_id)  # before the keepalive notices
        with pytest.raises(SessionLost):
            await Election(kv, KS, "svc", session, address="a:1").campaign()
        assert await observe(kv, KS, "svc") is None
    finally:
        await session.close()


# ---- Leadership


async def test_a_second_candidate_wins_after_the_first_leases_expiry(
        clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    comp_a, comp_b = Recorder(clock), Recorder(clock)
    # A's lease is short; B's long, so that only A's runs out when time jumps.
    a = Leadership(kv, KS, "svc", "a:1", [comp_a], clock=clock,
                   config=LeadershipConfig(ttl=2, retry_backoff=0.05))
    b = Leadership(kv, KS, "svc", "b:1", [comp_b], clock=clock,
                   config=LeadershipConfig(ttl=60, retry_backoff=0.05))
    a.start()
    try:
        await eventually(lambda: a.is_leader, BOUND)
        term_a = a.term
        assert term_a is not None and comp_a.guard.check() is term_a
        b.start()
        prefix = KS.election_prefix("svc").encode()

        async def both_candidates() -> bool:
            return len((await kv.range(prefix, prefix_end(prefix))).kvs) == 2

        await eventually(both_candidates, BOUND)
        assert not b.is_leader

        clock.advance(2.5)  # A is frozen past its TTL: no keepalive ran
        # A's guard refuses at once, before any revocation has run
        with pytest.raises(NotLeader):
            comp_a.guard.check()
        assert kv.expire_leases() != []  # etcd deletes A's key with its lease

        await eventually(lambda: b.is_leader, BOUND)
        term_b = b.term
        assert term_b is not None and term_b.revision > term_a.revision
        assert comp_b.calls == [f"establish {term_b.revision}"]
        assert comp_b.guard.check() is term_b
        await eventually(lambda: a.term is None, BOUND)
        assert comp_a.calls == [f"establish {term_a.revision}", "revoke"]
        # A write fenced with A's term fails, whatever A believes
        with pytest.raises(FenceLost):
            await fenced_txn(kv, term_a.fence, ops=[Put(b"/late", b"a")])
        assert (await fenced_txn(kv, term_b.fence, ops=[Put(b"/ok", b"b")])).succeeded
        info = await observe(kv, KS, "svc")
        assert info is not None and (info.address, info.term) == ("b:1", term_b.revision)
    finally:
        await b.resign(grace=1.0)
        await a.resign(grace=1.0)
    assert not a.is_leader and not b.is_leader


# ---- watch and membership


async def test_a_resilient_watch_resyncs_then_streams_and_resyncs_after_compaction(
        clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    await kv.txn([], [Put(b"/w/a", b"1")])
    old = await kv.revision()
    cfg = WatchConfig(liveness_interval=60)
    async with ResilientWatch(kv, b"/w/", config=cfg) as watch:
        (first,) = await asyncio.wait_for(watch.get(), BOUND)
        assert isinstance(first, Resync) and [i.key for i in first.items] == [b"/w/a"]
        await kv.txn([], [Put(b"/w/b", b"1"), Delete(b"/w/a")])
        (batch,) = await asyncio.wait_for(watch.get(), BOUND)
        assert isinstance(batch, Batch) and batch.revision == old + 1
        assert [(e.kv.key, e.type.name) for e in batch.events] == [
            (b"/w/b", "PUT"), (b"/w/a", "DELETE")]
    await kv.txn([], [Put(b"/w/c", b"1")])
    await kv.compact(await kv.revision())
    # resuming from a compacted revision: a resync at the current state
    async with ResilientWatch(kv, b"/w/", start_revision=old, config=cfg) as watch:
        (msg,) = await asyncio.wait_for(watch.get(), BOUND)
        assert isinstance(msg, Resync) and msg.revision == await kv.revision()
        assert [i.key for i in msg.items] == [b"/w/b", b"/w/c"]


async def test_membership_registers_under_a_lease_and_leaves_on_close(
        clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    reg = Registration(kv, KS, Member("svc", "r1", "127.0.0.1:1", 1), ttl=60,
                       flush_interval=0.01)
    reg.start()
    try:
        await asyncio.wait_for(reg.registered.wait(), BOUND)
        assert reg.alive(clock())
        got = await list_members(kv, KS, "svc")
        assert [m.replica for m in got.members] == ["r1"]
        reg.set_applied_revision(42)

        async def applied() -> bool:
            return (await list_members(kv, KS, "svc")).members[0].applied_revision == 42

        await eventually(applied, BOUND)
    finally:
        await reg.close()
    assert (await list_members(kv, KS, "svc")).members == ()

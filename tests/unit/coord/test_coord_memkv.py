"""What MemoryKV adds beyond the shared contract (tests/contract): the
virtual clock drives lease expiry, and the txn size cap of etcd's
``--max-txn-ops`` counts the compares too."""

from __future__ import annotations

import asyncio

import pytest
from virtual_clock import VirtualClock

from drover.coord.kv import Compare, Put
from drover.coord.memkv import MemoryKV


async def test_expiry_follows_the_virtual_clock_and_reaches_watchers(
        clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    lease = await kv.lease_grant(10)
    await kv.txn([], [Put(b"/s/a", b"1", lease=lease)])
    w = await kv.watch(b"/s/", b"/s0", 0)
    clock.advance(9.9)
    assert kv.expire_leases() == []
    clock.advance(0.1)
    assert kv.expire_leases() == [lease]
    batch = await asyncio.wait_for(anext(aiter(w)), 1.0)
    assert [(e.kv.key, e.deleted) for e in batch.events] == [(b"/s/a", True)]
    await w.close()


async def test_a_keepalive_restarts_the_ttl(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    lease = await kv.lease_grant(10)
    await kv.txn([], [Put(b"k", b"1", lease=lease)])
    clock.advance(8)
    assert await kv.lease_keepalive(lease) == 10
    clock.advance(8)
    assert len((await kv.range(b"k", b"")).kvs) == 1
    clock.advance(2)
    assert (await kv.range(b"k", b"")).kvs == []


async def test_the_txn_cap_counts_compares_and_ops(clock: VirtualClock) -> None:
    kv = MemoryKV(clock, max_txn_ops=4)
    assert (await kv.txn([Compare(b"k", "create", 0)] * 4, [Put(b"k", b"")] * 1)).succeeded
    with pytest.raises(ValueError, match="max-txn-ops"):
        await kv.txn([Compare(b"k", "mod", 0)] * 5, [])
    with pytest.raises(ValueError, match="max-txn-ops"):
        await kv.txn([], [Put(b"k", b"")] * 5)


async def test_compaction_keeps_what_a_read_at_its_revision_sees(clock: VirtualClock) -> None:
    kv = MemoryKV(clock)
    await kv.txn([], [Put(b"a", b"1"), Put(b"b", b"1")])
    await kv.txn([], [Put(b"a", b"2")])
    await kv.txn([], [Put(b"b", b"2")])
    await kv.compact(3)
    page = await kv.range(b"a", b"c", revision=3)
    assert [(x.key, x.value) for x in page.kvs] == [(b"a", b"2"), (b"b", b"1")]
    page = await kv.range(b"a", b"c")
    assert [(x.key, x.value) for x in page.kvs] == [(b"a", b"2"), (b"b", b"2")]

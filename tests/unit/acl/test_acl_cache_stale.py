"""The ACL cache's confirm step on the in-memory etcd twin: a view is dated
current only by a read that proves it, never while etcd cannot answer or
while its watch is stalled behind a revocation; it recovers by itself.

The freshness clock is the virtual one; only the watch's delivery and the
confirm's timeout (``max_stale / 6`` = 0.1 s here) run in real time, and
every wait is bounded by :data:`BOUND`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from polling import eventually
from virtual_clock import VirtualClock

from drover.acl import AclKeys, Unauthenticated, hash_secret
from drover.acl.cache import AclCache
from drover.acl.errors import AclDataStale
from drover.api.acl.v1 import acl_pb2
from drover.config import AclSettings
from drover.coord.errors import EtcdUnavailable
from drover.coord.kv import Delete, Put, RangeSummary, WatchBatch
from drover.coord.memkv import MemoryKV

KEYS = AclKeys("/mem/drover/v1/")
BOUND = 10.0
SETTINGS = AclSettings(max_stale=0.6)  # confirm timeout 0.1 s (real), bound 0.6 s (virtual)


class _GatedWatch:
    """A watch whose deliveries wait while the gate is shut (a stalled stream)."""

    def __init__(self, inner: Any, gate: asyncio.Event) -> None:
        self._inner, self._gate = inner, gate

    async def __aiter__(self) -> AsyncIterator[WatchBatch]:
        async for batch in self._inner:
            await self._gate.wait()
            yield batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _FaultyKV:
    """MemoryKV whose reads can fail (etcd frozen) and whose watch can stall."""

    def __init__(self) -> None:
        self.mem = MemoryKV()
        self.unreachable = False
        self.flowing = asyncio.Event()
        self.flowing.set()

    def _check(self) -> None:
        if self.unreachable:
            raise EtcdUnavailable("etcd frozen (test)")

    async def range(self, *a: Any, **kw: Any) -> Any:
        self._check()
        return await self.mem.range(*a, **kw)

    async def newest(self, key: bytes, range_end: bytes) -> Any:
        self._check()
        return await self.mem.newest(key, range_end)

    async def summary(self, key: bytes, range_end: bytes) -> RangeSummary:
        self._check()
        return await self.mem.summary(key, range_end)

    async def watch(self, *a: Any, **kw: Any) -> Any:
        return _GatedWatch(await self.mem.watch(*a, **kw), self.flowing)


def _token(accessor: str) -> Put:
    return Put(KEYS.token(accessor).encode(), acl_pb2.StoredToken(
        token=acl_pb2.Token(accessor_id=accessor, type=acl_pb2.TOKEN_TYPE_MANAGEMENT),
        secret_sha256=hash_secret(f"secret-{accessor}")).SerializeToString())


@pytest.fixture
async def cache(clock: VirtualClock) -> AsyncIterator[tuple[AclCache, _FaultyKV]]:
    kv = _FaultyKV()
    await kv.mem.txn([], [_token("a"), _token("b")])
    c = await AclCache(kv, KEYS, settings=SETTINGS, clock=clock).start()  # type: ignore[arg-type]
    try:
        async with asyncio.timeout(BOUND):
            await c.ready.wait()
        yield c, kv
    finally:
        await c.close()


async def test_a_healthy_view_is_proven_current_as_of_the_read_start(
        cache: tuple[AclCache, _FaultyKV], clock: VirtualClock) -> None:
    c, _ = cache
    assert c.freshness.current_at == 0.0  # the first listing
    clock.advance(5.0)
    assert await c.confirm()
    assert c.freshness.current_at == 5.0 and c.freshness.refusal() is None


async def test_etcd_unreachable_goes_stale_past_the_bound_and_recovers(
        cache: tuple[AclCache, _FaultyKV], clock: VirtualClock) -> None:
    c, kv = cache
    kv.unreachable = True
    clock.advance(1.0)
    assert not await c.confirm()
    assert isinstance(c.freshness.refusal(), AclDataStale)
    kv.unreachable = False
    assert await c.confirm()
    assert c.freshness.refusal() is None


async def test_a_stalled_watch_behind_a_revocation_is_never_dated_current(
        cache: tuple[AclCache, _FaultyKV], clock: VirtualClock) -> None:
    c, kv = cache
    kv.flowing.clear()  # the stream stalls; etcd itself answers
    await kv.mem.txn([], [Delete(KEYS.token("a").encode())])  # revoke a
    clock.advance(1.0)
    assert not await c.confirm()  # the view still holds a: not proven
    assert c.state.resolve("secret-a").accessor_id == "a"
    assert isinstance(c.freshness.refusal(), AclDataStale)
    # A token created meanwhile is no proof either (its put is newer than the view).
    await kv.mem.txn([], [_token("c")])
    assert not await c.confirm()
    kv.flowing.set()  # the watch catches up: recovery needs no operator
    await eventually(lambda: c.freshness.refusal() is None, BOUND)  # the confirm task proves it
    with pytest.raises(Unauthenticated):
        c.state.resolve("secret-a")
    assert c.state.resolve("secret-c").accessor_id == "c"


async def test_an_idle_prefix_under_a_busy_store_is_proven_without_events(
        cache: tuple[AclCache, _FaultyKV], clock: VirtualClock) -> None:
    c, kv = cache
    kv.flowing.clear()  # no ACL event can arrive, and none is needed
    for i in range(5):
        await kv.mem.txn([], [Put(f"/mem/drover/v1/jobs/{i}".encode(), b"x")])
    clock.advance(2.0)
    assert await c.confirm()
    assert c.freshness.current_at == 2.0

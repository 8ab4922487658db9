"""Read-your-write without the watch round trip (``Cache.apply_committed``),
on the session etcd: two replicas write concurrently; each replica's cache
must hand its listeners exactly etcd's history -- every object event once,
in revision order, none skipped, none applied twice -- and end equal to a
fresh list, whether a txn was applied by its writer or by the watch."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from state_harness import StateReplica, start_state

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import job_pb2
from drover.coord.keys import Keyspace
from drover.coord.kv import Put, prefix_end
from drover.dev.etcd import EtcdServer
from drover.state.app import EtcdStore
from drover.state.cache import Cache, Change
from drover.state.config import CacheConfig
from drover.state.core import codec

Event = tuple[int, str, str, str, bool, bytes, int]


@pytest.fixture(scope="module")
def private_etcd() -> Iterator[EtcdServer]:
    """Its own etcd: compacting the session etcd would cut the history other
    tests read (Subscribe from index 1), and other tests' writes (revisions
    outside this keyspace) would keep a cache from ever being exactly one
    revision behind its own txn, which the first test requires to happen."""
    server = EtcdServer(name="read-your-write").start()
    try:
        yield server
    finally:
        server.stop()


def record(cache: Cache) -> list[Event]:
    log: list[Event] = []

    def listen(_rev: int, changes: list[Change]) -> None:
        log.extend((c.revision, c.kind, c.namespace, c.id, c.deleted, c.value,
                    c.create_revision) for c in changes)

    cache.listeners.append(listen)
    return log


class Delay:
    seconds = 0.05


class SlowWatch:
    """The real etcd watch, each batch delivered ``delay.seconds`` late (a
    loaded replica): a txn's answer then reaches its writer before its own
    event."""

    def __init__(self, inner: Any, delay: Delay) -> None:
        self.inner, self.delay = inner, delay

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for batch in self.inner:
            if self.delay.seconds:
                await asyncio.sleep(self.delay.seconds)
            yield batch

    def request_progress(self) -> None:
        self.inner.request_progress()

    def skip_applied(self, applied: Callable[[], int]) -> None:
        # The inner watch looks before the delay: it still builds most
        # events, and the cache's own skip is what this test exercises.
        self.inner.skip_applied(applied)

    async def close(self) -> None:
        await self.inner.close()


async def slow_watch(cache: Cache, delay: Delay) -> None:
    """Restart ``cache``'s watch (from its revision) through :class:`SlowWatch`."""
    if cache._task is not None:
        cache._task.cancel()
        await asyncio.gather(cache._task, return_exceptions=True)
    watch = cache.store.watch

    async def slow(*args: Any) -> SlowWatch:
        return SlowWatch(await watch(*args), delay)

    cache.store.watch = slow  # type: ignore[method-assign,assignment]
    cache._task = asyncio.create_task(cache._run())


def count_direct(cache: Cache) -> list[bool]:
    outcomes: list[bool] = []
    real: Callable[..., bool] = cache.apply_committed

    def spy(revision: int, ops: Any) -> bool:
        applied = real(revision, ops)
        outcomes.append(applied)
        return applied

    cache.apply_committed = spy  # type: ignore[method-assign]
    return outcomes


async def history(store: EtcdStore, keys: codec.KeyCodec, after: int, upto: int) -> list[Event]:
    """etcd's own object events in ``(after, upto]``: the authority."""
    prefix = keys.base.encode()
    watch = await store.watch(prefix, prefix_end(prefix), after + 1)
    creates: dict[bytes, int] = {}
    out: list[Event] = []
    try:
        async for batch in watch:
            for ev in batch.events:
                kv = ev.kv
                ok = keys.parse(kv.key)
                if ok is None:
                    continue
                if ev.deleted:
                    create = creates.pop(kv.key, 0)
                else:
                    create = creates.setdefault(kv.key, kv.create_revision)
                out.append((kv.mod_revision, ok.kind, ok.namespace, ok.id, ev.deleted,
                            kv.value, create))
            if batch.revision >= upto:
                return out
    finally:
        await watch.close()
    raise AssertionError("watch ended")


async def fresh_objects(store: EtcdStore, keys: codec.KeyCodec) -> dict[str, dict[str, Any]]:
    cache = Cache(store, keys, CacheConfig())
    await cache.start()
    await cache.close()
    return {k: dict(t.objects) for k, t in cache.tables.tables.items()}


def job(i: int, count: int = 1) -> job_pb2.Job:
    return job_pb2.Job(id=f"j{i}", datacenters=["dc1"],
                       task_groups=[job_pb2.TaskGroup(name="g", count=count)])


async def workload(r: StateReplica, seed: int, ids: range) -> None:
    """Registers (new keys), re-registers with a changed spec (puts on
    existing keys: create revisions kept), purges (deletes), concurrently."""
    rnd = random.Random(seed)
    stub = r.stub

    async def one(i: int) -> None:
        await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(i)))
        if rnd.random() < 0.5:
            await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(i, count=3)))
        if rnd.random() < 0.3:
            await stub.DeregisterJob(state_pb2.DeregisterJobRequest(
                namespace="default", id=f"j{i}", purge=True))

    await asyncio.gather(*(one(i) for i in ids))


async def test_two_writing_replicas_see_etcd_history_exactly_once(
        private_etcd: EtcdServer, keyspace: Keyspace) -> None:
    a = await start_state(private_etcd.endpoint, keyspace)
    b = await start_state(private_etcd.endpoint, keyspace)
    try:
        keys = a.service.cache.keys
        start = await a.store.revision()
        delay = Delay()
        for r in (a, b):
            await r.service.cache.wait_for_revision(start)
            await slow_watch(r.service.cache, delay)
        logs = [record(a.service.cache), record(b.service.cache)]
        direct = [count_direct(a.service.cache), count_direct(b.service.cache)]
        # Alone, one write after another: each is applied by its writer (the
        # cache is exactly one revision behind it), and its watch event,
        # arriving later, must be skipped.
        for r, outcomes, base in ((a, direct[0], 100), (b, direct[1], 200)):
            await r.service.cache.wait_for_revision(await r.store.revision(), within=10)
            for i in range(base, base + 4):
                await r.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(i)))
            # A changed spec: puts on existing keys (their create revision kept).
            await r.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(base, count=3)))
            await r.stub.DeregisterJob(state_pb2.DeregisterJobRequest(
                namespace="default", id=f"j{base + 1}", purge=True))
            assert outcomes == [True] * 6
        # Both replicas at once, watches at full speed: some txns applied
        # directly, some by the watch (as it happens).
        delay.seconds = 0
        await asyncio.wait_for(asyncio.gather(workload(a, 1, range(0, 30)),
                                              workload(b, 2, range(30, 60))), 60)
        upto = await a.store.revision()
        for r in (a, b):
            await r.service.cache.wait_for_revision(upto, within=30)
        assert isinstance(a.store, EtcdStore)
        want = await history(a.store, keys, start, upto)
        for log in logs:
            assert len(log) == len(want)
            assert log == want
        listed = await fresh_objects(a.store, keys)
        for r in (a, b):
            got = {k: dict(t.objects) for k, t in r.service.cache.tables.tables.items()}
            assert got == listed
    finally:
        await a.close()
        await b.close()


@pytest.mark.slow
async def test_relist_after_compaction_keeps_direct_applies_exact(
        private_etcd: EtcdServer, keyspace: Keyspace) -> None:
    """The watch falls behind a compaction and re-lists while its replica
    keeps writing: direct applies are refused during the list, and the
    tables end equal to a fresh list."""
    a = await start_state(private_etcd.endpoint, keyspace)
    try:
        cache = a.service.cache
        direct = count_direct(cache)
        assert isinstance(a.store, EtcdStore)
        await workload(a, 3, range(0, 10))
        # Stop the watch, write behind its back, compact past it, resume.
        assert cache._task is not None
        cache._task.cancel()
        await asyncio.gather(cache._task, return_exceptions=True)
        cache._task = None
        keys = cache.keys
        for i in range(5):
            await a.store.txn([], [Put(keys.key(codec.JOBS, "default", f"raw{i}"),
                                       codec.encode(job(100 + i))),
                                   Put(f"{keys.base}state/revision".encode(), b"")])
        now = await a.store.revision()
        await a.store.compact(now)
        resets: list[int] = []
        cache.reset_listeners.append(resets.append)
        await slow_watch(cache, Delay())  # (resumes it: compacted, so it re-lists)
        writes = asyncio.create_task(workload(a, 4, range(10, 40)))
        await asyncio.wait_for(writes, 60)
        upto = await a.store.revision()
        await cache.wait_for_revision(upto, within=10)
        assert resets, "the watch did not re-list"
        assert any(direct)
        got = {k: dict(t.objects) for k, t in cache.tables.tables.items()}
        assert got == await fresh_objects(a.store, keys)
    finally:
        await a.close()

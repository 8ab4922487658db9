"""ResilientWatch against a private etcd (compaction and SIGSTOP are global)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from drover.config import EtcdSettings
from drover.coord import (
    Batch,
    EtcdClient,
    EventType,
    ResilientWatch,
    Resync,
    WatchConfig,
    WatchMessage,
    connect,
)
from drover.coord.etcd_kv import EtcdKV
from drover.dev.etcd import EtcdServer


@pytest.fixture(scope="module")
def private_etcd() -> Iterator[EtcdServer]:
    server = EtcdServer(name="coord-watch").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def clients(private_etcd: EtcdServer) -> AsyncIterator[tuple[EtcdClient, EtcdClient]]:
    settings = EtcdSettings(endpoints=(private_etcd.endpoint,))
    bulk = await connect(settings, purpose="bulk")
    control = await connect(settings, purpose="control")
    yield bulk, control
    await bulk.close()
    await control.close()


async def take(watch: ResilientWatch, until: int, within: float = 5) -> list[WatchMessage]:
    out: list[WatchMessage] = []
    async with asyncio.timeout(within):
        while not out or out[-1].revision < until:
            out.extend(await watch.get())
    return out


async def test_initial_resync_then_batches_per_revision(
        clients: tuple[EtcdClient, EtcdClient]) -> None:
    bulk, control = clients
    await control.put(b"/w1/a", b"0")
    async with ResilientWatch(EtcdKV(bulk), b"/w1/") as watch:
        first = await take(watch, 0)
        assert isinstance(first[0], Resync) and [kv.key for kv in first[0].items] == [b"/w1/a"]
        put = control.transactions.put
        await control.transaction(compare=[], success=[put(b"/w1/b", b"1"), put(b"/w1/c", b"2")],
                                  failure=[])
        rev = (await control.delete(b"/w1/a")).header.revision
        msgs = await take(watch, rev)
        assert all(isinstance(m, Batch) for m in msgs)
        assert [len(m.events) for m in msgs if isinstance(m, Batch)] == [2, 1]
        last = msgs[-1]
        assert isinstance(last, Batch) and last.events[0].type is EventType.DELETE


async def test_compaction_while_consumer_paused_resyncs_without_gaps_or_dupes(
        clients: tuple[EtcdClient, EtcdClient]) -> None:
    bulk, control = clients
    cfg = WatchConfig(max_buffered_events=3, liveness_interval=10)
    async with ResilientWatch(EtcdKV(bulk), b"/w2/", config=cfg) as watch:
        start = await take(watch, 0)
        assert isinstance(start[-1], Resync)
        revs = [(await control.put(f"/w2/k{i}".encode(), str(i).encode())).header.revision
                for i in range(3)]
        async with asyncio.timeout(3):  # the consumer is paused: the buffer fills...
            for _ in iter(lambda: watch.paused, True):
                await asyncio.sleep(0.01)
        assert watch.buffered_events == 3  # ...and the stream stops: memory is bounded
        revs += [(await control.put(f"/w2/k{i}".encode(), str(i).encode())).header.revision
                 for i in range(3, 10)]
        await control.compact(revs[-1])
        after = [(await control.put(f"/w2/z{i}".encode(), b"z")).header.revision
                 for i in range(3)]
        msgs = await take(watch, after[-1])
        resyncs = [i for i, m in enumerate(msgs) if isinstance(m, Resync)]
        assert len(resyncs) == 1, msgs
        resync = msgs[resyncs[0]]
        assert isinstance(resync, Resync) and "compacted" in resync.reason
        before = [m.revision for m in msgs[: resyncs[0]]]
        assert before == revs[:3]  # what was buffered before the pause, in order
        keys = {kv.key for kv in resync.items}
        assert {f"/w2/k{i}".encode() for i in range(10)} <= keys
        tail = [m for m in msgs[resyncs[0] + 1:] if isinstance(m, Batch)]
        tail_revs = [m.revision for m in tail]
        assert tail_revs == sorted(set(tail_revs))  # no duplicates, in order
        assert tail_revs == [r for r in after if r > resync.revision]
        assert watch.resyncs == 2


@pytest.mark.slow
async def test_frozen_etcd_is_reported_within_the_liveness_bound_then_resumes(
        clients: tuple[EtcdClient, EtcdClient], private_etcd: EtcdServer) -> None:
    bulk, control = clients
    cfg = WatchConfig(liveness_interval=0.3, liveness_timeout=0.3)
    async with ResilientWatch(EtcdKV(bulk), b"/w3/", config=cfg) as watch:
        await take(watch, 0)
        seen = watch.health.version
        private_etcd.pause()
        t0 = time.monotonic()
        try:
            got = await asyncio.wait_for(watch.health.wait_newer(seen), 3)
            assert not got.value.healthy
            assert time.monotonic() - t0 <= cfg.liveness_interval + cfg.liveness_timeout + 0.3
        finally:
            private_etcd.resume()
        got = await asyncio.wait_for(watch.health.wait_newer(got.version), 5)
        assert got.value.healthy
        rev = (await control.put(b"/w3/after", b"1")).header.revision
        msgs = await take(watch, rev)
        assert msgs[-1].revision == rev

"""The replica's cache (:mod:`drover.state.cache`).

Its close is bounded: its watch task is cancelled and
waited for at most ``CacheConfig.stop_timeout``, also when the watch stream
swallows the cancel (once, or every time: :mod:`stubborn`). On the old
``task.cancel(); with suppress(CancelledError): await task`` the close never
returned. :class:`MemoryKV` under it (via :class:`stubborn.StubbornKV`).

The cache raises the young generation's GC threshold when it starts
(never lowers it; 0 leaves it), on MemoryKV.

The initial list leaves the collector on, with the listed objects frozen
*before* it came back on (on :class:`MemoryKV`: no etcd): otherwise the
first allocation after the list walks every listed object in the youngest
generation.

Who applied this replica's own committed txns to its cache (the
``drover.state.cache.own_writes`` counter): the writer at once, the watch
before the answer came, or the watch after the write waited for it."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from stubborn import Stubborn, StubbornKV, ends_within, settle
from virtual_clock import VirtualClock

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.coord.errors import EtcdUnavailable
from drover.coord.keys import Keyspace
from drover.coord.kv import Put, RangePage
from drover.coord.memkv import MemoryKV
from drover.state.app import StateService
from drover.state.cache import Cache, marker_put
from drover.state.config import CacheConfig
from drover.state.core import codec

# -- close ----------------------------------------------------------------------

HANG = 10.0  # a close bounded at 0.2 s not done by then is hung


@pytest.mark.parametrize("swallow", [1, None], ids=["swallows-once", "ignores-all"])
async def test_cache_close_is_bounded_when_its_watch_ignores_cancel(
        keyspace: Keyspace, clock: VirtualClock, swallow: int | None,
        caplog: pytest.LogCaptureFixture) -> None:
    kv = StubbornKV(clock)
    keys = codec.KeyCodec(keyspace)
    kv.watch_stubborn = stubborn = Stubborn(swallow)
    cache = Cache(kv, keys, CacheConfig(stop_timeout=0.2), clock=clock)
    before = asyncio.all_tasks()
    await cache.start()
    async with asyncio.timeout(HANG):
        await kv.reading.wait()  # the watch task reads the stubborn stream
    with caplog.at_level(logging.WARNING, logger="drover.tasks"):
        closing = await ends_within(cache.close(), HANG)
    try:
        assert closing.done(), "the state cache's close hung on its watch task"
        closing.result()
        assert stubborn.swallowed == 1
        (msg,) = [r.getMessage() for r in caplog.records if r.name == "drover.tasks"]
        assert msg.startswith("state cache close: task state-cache-watch did not end "
                              "within 0.2s"), msg
    finally:
        stubborn.free()
        await settle(closing, *(asyncio.all_tasks() - before - {asyncio.current_task()}))


# -- the young generation's threshold -------------------------------------------

@pytest.fixture
def threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*saved)


async def _started(config: CacheConfig) -> None:
    cache = Cache(MemoryKV(), codec.KeyCodec(Keyspace("/gc-test")), config)
    await cache.start()
    await cache.close()


@pytest.mark.usefixtures("threshold")
async def test_start_raises_the_young_threshold_keeping_the_older_ones() -> None:
    gc.set_threshold(700, 11, 12)
    await _started(CacheConfig(gc_young_threshold=5000))
    assert gc.get_threshold() == (5000, 11, 12)


@pytest.mark.usefixtures("threshold")
async def test_start_never_lowers_it_and_zero_leaves_it() -> None:
    gc.set_threshold(9000, 10, 10)
    await _started(CacheConfig(gc_young_threshold=5000))
    assert gc.get_threshold() == (9000, 10, 10)
    gc.set_threshold(700, 10, 10)
    await _started(CacheConfig(gc_young_threshold=0))
    assert gc.get_threshold() == (700, 10, 10)


# -- the initial list and the collector -----------------------------------------

@pytest.fixture
def restore_gc() -> Iterator[None]:
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        if enabled:
            gc.enable()


async def _seeded(keyspace: Keyspace, n: int) -> tuple[MemoryKV, codec.KeyCodec]:
    kv, keys = MemoryKV(), codec.KeyCodec(keyspace)
    ops = [Put(keys.key(codec.EVALUATIONS, "default", f"ev-{i:05}"), codec.encode(
        evaluation_pb2.Evaluation(id=f"ev-{i:05}", namespace="default", job_id=f"j{i % 7}")))
        for i in range(n)]
    for i in range(0, n, 100):
        await kv.txn([], ops[i:i + 100])
    return kv, keys


@pytest.mark.usefixtures("restore_gc")
async def test_a_big_list_is_frozen_before_the_collector_is_back_on(keyspace: Keyspace) -> None:
    kv, keys = await _seeded(keyspace, 3000)
    gc.collect()
    gc.set_threshold(700, 10, 10)  # CPython's default young threshold, kept by the cache (0)
    gc.enable()
    young: list[int] = []  # the youngest generation's count at each collection

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            young.append(gc.get_count()[0])

    cache = Cache(kv, keys, CacheConfig(page_size=500, freeze_min_objects=1000,
                                    gc_young_threshold=0))
    gc.callbacks.append(seen)
    try:
        await cache.start()
        await cache.close()
        junk = [[i] for i in range(5000)]  # allocations enough for collections
        del junk
    finally:
        gc.callbacks.remove(seen)
    assert gc.isenabled()
    assert len(cache.tables[codec.EVALUATIONS]) == 3000
    # Every listed entry went to the permanent generation; no collection
    # found them young (the old order walked them all at the next allocation).
    assert gc.get_freeze_count() >= 3000
    assert young and max(young) < 3000, young


@pytest.mark.usefixtures("restore_gc")
async def test_a_failed_list_turns_the_collector_back_on(keyspace: Keyspace) -> None:
    _, keys = await _seeded(keyspace, 10)
    gc.enable()

    class Broken(MemoryKV):
        async def range(self, *args: Any, **kwargs: Any) -> RangePage:
            raise RuntimeError("etcd went away")

    broken = Broken()
    with pytest.raises(RuntimeError):
        await Cache(broken, keys, CacheConfig()).start()
    assert gc.isenabled()


# -- who applied its own writes -------------------------------------------------

class _NoMetadata:
    def invocation_metadata(self) -> tuple[()]:
        return ()


def _ev(i: int) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=f"e{i}", namespace="default", type="service",
                                     status=evaluation_pb2.EVALUATION_STATUS_PENDING)


async def test_each_committed_txn_is_counted_once_by_who_applied_it(
        service: StateService) -> None:
    cache = service.cache
    assert cache.own_writes == {"writer": 0, "watch": 0, "waited": 0}
    # The cache is exactly one revision behind its own txn: the writer applies it.
    await cache.sync()
    await service.servicer.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=[_ev(1)]), _NoMetadata())
    assert cache.own_writes == {"writer": 1, "watch": 0, "waited": 0}

    key = cache.keys.key(codec.EVALUATIONS, "default", "e2")
    ops = [Put(key, codec.encode(_ev(2))), marker_put(cache.keys)]
    # Another replica's write the cache has not seen yet: behind, so this
    # replica's next txn waits for the watch.
    other = await cache.store.txn([], ops)
    mine = await cache.store.txn([], ops)
    assert cache.revision < other.revision
    assert not cache.apply_committed(mine.revision, ops)
    assert cache.own_writes["waited"] == 1
    await cache.wait_for_revision(mine.revision)
    # Its answer after the watch applied it: the watch's.
    assert not cache.apply_committed(mine.revision, ops)
    assert cache.own_writes == {"writer": 1, "watch": 1, "waited": 1}
    assert cache.tables[codec.EVALUATIONS].objects["default/e2"][1] == mine.revision


async def test_a_consistent_read_refuses_within_the_marker_timeout(keyspace: Keyspace) -> None:
    """etcd silent (a replica cut from it): sync refuses ETCD_UNAVAILABLE
    after ``marker_timeout``, not after the caller's deadline."""
    kv, keys = await _seeded(keyspace, 3)
    cache = Cache(kv, keys, CacheConfig(marker_timeout=0.2))
    await cache.start()
    try:
        silent = asyncio.Event()

        async def hang(*args: Any, **kwargs: Any) -> RangePage:
            await silent.wait()
            raise AssertionError("unreachable")

        kv.range = hang  # type: ignore[method-assign]
        with pytest.raises(EtcdUnavailable):
            async with asyncio.timeout(2):
                await cache.sync()
    finally:
        await cache.close()

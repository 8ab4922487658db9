"""The initial list leaves the collector on, with the listed objects frozen
*before* it came back on (on :class:`MemoryKV`: no etcd): otherwise the
first allocation after the list walks every listed object in the youngest
generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from drover.api.types.v1 import evaluation_pb2
from drover.coord.keys import Keyspace
from drover.coord.kv import Put, RangePage
from drover.coord.memkv import MemoryKV
from drover.state.cache import Cache, CacheConfig
from drover.state.core import codec


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
        await Cache(broken, keys).start()
    assert gc.isenabled()

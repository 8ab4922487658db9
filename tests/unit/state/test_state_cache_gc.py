"""The cache raises the young generation's GC threshold when it starts
(never lowers it; 0 leaves it), on MemoryKV."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from drover.coord.keys import Keyspace
from drover.coord.memkv import MemoryKV
from drover.state.cache import Cache, CacheConfig
from drover.state.core import codec


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

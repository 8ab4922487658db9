"""The state cache's close is bounded: its watch task is cancelled and
waited for at most ``CacheConfig.stop_timeout``, also when the watch stream
swallows the cancel (once, or every time: :mod:`stubborn`). On the old
``task.cancel(); with suppress(CancelledError): await task`` the close never
returned. :class:`MemoryKV` under it (via :class:`stubborn.StubbornKV`)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from stubborn import Stubborn, StubbornKV, ends_within, settle
from virtual_clock import VirtualClock

from drover.coord.keys import Keyspace
from drover.state.cache import Cache, CacheConfig
from drover.state.core import codec

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

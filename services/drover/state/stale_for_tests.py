"""A deliberately broken replica, for tests only: stale reads.

``DROVER_TEST_STALE_READS=<seconds>`` in a state replica's environment
makes it answer reads without the consistent-read wait (the catch-up to
etcd's last write that every non-``stale`` read makes) and apply its
watch ``<seconds>`` late, so it serves what etcd held that long ago. The
linearizability checker must catch it (tests/system/test_stale_replica_linearizability.py).
Unset (always, outside that test): no effect at all.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import TypeVar

STALE_READS_ENV = "DROVER_TEST_STALE_READS"

T = TypeVar("T")


def stale_reads_lag() -> float:
    """The lag the environment asks for; 0: a correct replica."""
    raw = os.environ.get(STALE_READS_ENV, "")
    return float(raw) if raw else 0.0


async def lagged(batches: AsyncIterator[T], lag: float) -> AsyncIterator[T]:
    """``batches``, each handed on ``lag`` seconds after it arrived (read
    ahead by a pump, so the lag does not add up)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, T] | BaseException | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for b in batches:
                queue.put_nowait((loop.time(), b))
            queue.put_nowait(None)
        except Exception as e:  # handed to the consumer, raised there
            queue.put_nowait(e)

    task = asyncio.create_task(pump(), name="stale-reads-pump")
    try:
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            at, batch = item
            await asyncio.sleep(max(0.0, at + lag - loop.time()))
            yield batch
    finally:
        task.cancel()

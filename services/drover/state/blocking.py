"""Blocking queries: ``min_index`` + ``max_wait`` on every read.

A read blocks until the index of its answer (the kind's table index: the
revision of the last change to any object of that kind) exceeds
``min_index``, or until the wait ends; either way it answers with the index
it reflects, and the client passes that back as its next ``min_index``.

:func:`blocking_wait` is the pure wait computation (default 5 minutes,
capped at 10, plus up to 1/16 random jitter so that a crowd of watchers
started together does not return together). :class:`IndexWaiters` wakes
waiters keyed by the index they wait to exceed: a table change wakes only
the waiters it satisfies, so a million idle long polls cost one heap entry
each and no wakeups.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field

from drover.errors import InvalidArgument
from drover.state.config import BlockingConfig


def blocking_wait(requested: float, rand: float, config: BlockingConfig) -> float:
    """How long to block: ``requested`` seconds (0: the default), capped,
    plus ``rand`` (in [0, 1)) times the jitter fraction of it."""
    if requested < 0:
        raise InvalidArgument(
            "query.max_wait must not be negative", metadata={"field": "query.max_wait"}
        )
    wait = config.default_wait if requested == 0 else min(requested, config.max_wait)
    return wait + wait * config.jitter_fraction * rand


@dataclass(order=True)
class _Waiter:
    min_index: int
    seq: int
    future: asyncio.Future[None] = field(compare=False)


class IndexWaiters:
    """Futures resolved once an index exceeds the one each waits on."""

    def __init__(self) -> None:
        self._heap: list[_Waiter] = []
        self._seq = itertools.count()
        self.index = 0
        self._abandoned = 0

    def __len__(self) -> int:
        return len(self._heap)

    def advance(self, index: int) -> None:
        if index <= self.index:
            return
        self.index = index
        while self._heap and self._heap[0].min_index < index:
            w = heapq.heappop(self._heap)
            if not w.future.done():
                w.future.set_result(None)

    async def wait(self, min_index: int, within: float) -> bool:
        """True once ``index > min_index``; False after ``within`` seconds."""
        if self.index > min_index:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, _Waiter(min_index, next(self._seq), fut))
        try:
            async with asyncio.timeout(within):
                await asyncio.shield(fut)
            return True
        except TimeoutError:
            return self.index > min_index
        finally:
            if not fut.done():
                fut.cancel()
                # Lazy removal; rebuild only when abandoned entries dominate,
                # so timeouts cost amortised O(log n), not a scan each.
                self._abandoned += 1
                if self._abandoned * 2 > len(self._heap):
                    self._heap = [w for w in self._heap if not w.future.done()]
                    heapq.heapify(self._heap)
                    self._abandoned = 0

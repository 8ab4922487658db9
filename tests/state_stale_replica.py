"""A deliberately broken state replica, for tests only: stale reads.

``python -m state_stale_replica <seconds> serve state ...`` (with tests/ on
``PYTHONPATH``) runs ``drover`` with two faults installed first: reads skip
the consistent-read wait (the catch-up to etcd's last write that every
non-``stale`` read makes: every read is judged as a ``stale`` one with no
bound), and the cache's watch is applied ``<seconds>`` late, so the replica
serves what etcd held that long ago. The linearizability checker must catch
it (tests/system/test_stale_replica_linearizability.py). Production code
knows nothing of this module.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from drover.cli import main as cli_main
from drover.state import app
from drover.state.core import staleness

T = TypeVar("T")


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


class LaggedWatch:
    """A store's watch whose batches arrive ``lag`` seconds late."""

    def __init__(self, watch: Any, lag: float) -> None:
        self.watch, self.lag = watch, lag

    def skip_applied(self, applied: Callable[[], int]) -> None:
        self.watch.skip_applied(applied)

    def __aiter__(self) -> AsyncIterator[Any]:
        return lagged(aiter(self.watch), self.lag)

    async def close(self) -> None:
        await self.watch.close()


def install(lag: float) -> None:
    """Break this process's state replica (module doc)."""

    class LaggedStore(app.EtcdStore):
        async def watch(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return LaggedWatch(await super().watch(*args, **kwargs), lag)

    app.EtcdStore = LaggedStore  # type: ignore[misc]
    staleness.bound_of = lambda stale, max_stale: staleness.Bound(True)  # type: ignore[assignment]


if __name__ == "__main__":
    install(float(sys.argv.pop(1)))
    cli_main.main()

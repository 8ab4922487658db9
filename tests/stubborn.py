"""Awaits that do not end on their cancel, for the "nothing hangs" tests.

A :class:`Stubborn` stands where a real bug would be: a seam (a KV call, a
stream) whose await swallows the cancel that lands in it -- ``swallow=1``:
the first one only (3.11's ``asyncio.wait_for`` dropping a cancel that lands
as its awaitable finishes), ``None``: every one (a loop catching
``CancelledError``) -- and goes on waiting until the test releases it.

A stop that awaits such a task with no bound never returns, and a deadline
around it does not help (the deadline's cancel is forwarded to the stuck
task and swallowed too). So the tests never await the stop directly: they
run it as a task and look with :func:`ends_within`, which waits with
:func:`asyncio.wait` (it cancels nothing), and release the stubborn await
afterwards so no task outlives the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from drover.coord.kv import Compare, KeepAlives, Op, TxnResult, Watch
from drover.coord.memkv import MemoryKV


class Stubborn:
    """Where a cancel lands and is swallowed, until :meth:`free`."""

    def __init__(self, swallow: int | None = None) -> None:
        self.swallow = swallow
        self.swallowed = 0
        self.entered = asyncio.Event()
        self._release = asyncio.Event()

    async def hold(self) -> None:
        """Wait until freed, swallowing up to ``swallow`` cancels (None: all)."""
        self.entered.set()
        while not self._release.is_set():
            try:
                await self._release.wait()
            except asyncio.CancelledError:
                if self._release.is_set():
                    raise  # freed: stubborn no more
                self.swallowed += 1
                if self.swallow is not None and self.swallowed > self.swallow:
                    raise

    async def caught(self) -> None:
        """A cancel was just caught (and is being swallowed): count it, hold."""
        self.swallowed += 1
        await self.hold()

    def free(self) -> None:
        self._release.set()


class _StubbornStream:
    """A watch or keepalive stream whose read swallows the cancel that lands
    in it (via its :class:`Stubborn`); everything else goes to the real one."""

    def __init__(self, inner: Any, stubborn: Stubborn, reading: asyncio.Event) -> None:
        self._inner, self._stubborn, self._reading = inner, stubborn, reading

    def __getattr__(self, name: str) -> Any:  # send, close, cancel, suspect, ...
        return getattr(self._inner, name)

    async def __aiter__(self) -> AsyncIterator[Any]:
        self._reading.set()
        try:
            async for item in self._inner:
                yield item
        except asyncio.CancelledError:
            await self._stubborn.caught()
            raise


class StubbornKV(MemoryKV):
    """:class:`MemoryKV` with seams that ignore their cancel, each armed by
    setting its ``*_stubborn`` attribute: ``keepalive`` and ``watch`` (every stream opened
    after, read until cancelled), ``txn`` (the next txn only: it waits in
    the stubborn await before it applies). ``reading`` is set once a
    stubborn stream is being read."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__(clock)
        self.keepalive_stubborn: Stubborn | None = None
        self.watch_stubborn: Stubborn | None = None
        self.txn_stubborn: Stubborn | None = None
        self.reading = asyncio.Event()

    # (override: the stand-in is a KeepAlives/Watch, not MemoryKV's own stream class)
    def keepalives(self, lease: int) -> KeepAlives:  # type: ignore[override]
        inner = super().keepalives(lease)
        if self.keepalive_stubborn is None:
            return inner
        return _StubbornStream(inner, self.keepalive_stubborn, self.reading)  # type: ignore[return-value]

    async def watch(self, key: bytes, range_end: bytes, start_revision: int, *,  # type: ignore[override]
                    progress_notify: bool = False) -> Watch:
        inner = await super().watch(key, range_end, start_revision,
                                    progress_notify=progress_notify)
        if self.watch_stubborn is None:
            return inner
        return _StubbornStream(inner, self.watch_stubborn, self.reading)  # type: ignore[return-value]

    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult:
        stubborn, self.txn_stubborn = self.txn_stubborn, None
        if stubborn is not None:
            await stubborn.hold()
        return await super().txn(compares, ops)


async def ends_within(awaitable: Awaitable[Any], seconds: float) -> asyncio.Task[Any]:
    """Run ``awaitable`` as a task and wait up to ``seconds`` for it (never
    cancelling it); the task, done or not, for the test to assert on."""
    task = asyncio.ensure_future(awaitable)
    await asyncio.wait({task}, timeout=seconds)
    return task


async def settle(*tasks: asyncio.Future[Any] | None, seconds: float = 10.0) -> None:
    """After :meth:`Stubborn.free`: cancel ``tasks`` again (one that swallowed
    its cancel goes on working once freed) and wait, bounded, for them to
    end, so a test leaves nothing running behind it."""
    live = {t for t in tasks if t is not None and not t.done()}
    for t in live:
        t.cancel()
    if live:
        await asyncio.wait(live, timeout=seconds)

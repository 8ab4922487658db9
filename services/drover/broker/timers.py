"""The core's timers, fired by one task for the process lifetime.

The pure core keeps its timers (nack timeouts, nack delays, ``wait_until``
delays) in a heap and only says when the next one is due
(``next_deadline``); :class:`CoreTimer` is the async side: one task that
sleeps until then, calls ``tick`` and hands the effects to the runtime
(``after``: write them, serve parked polls, re-arm). An operation that may
have moved the deadline earlier (an enqueue with a delay, a delivery with
its nack timer) calls :meth:`CoreTimer.poke`; a poke that cannot make the
sleep shorter costs a comparison, not a wake-up.

Leader only: when the deadline is reached but ``serving`` says no (a term
past its lease clock: a process frozen and woken), nothing fires: no nack
timeout, no delay, until the term has ended and the core is a standby; it
re-checks every 50 ms or when poked. A standby's timers (its delays) fire
as a leader's would; they produce no effects (the core defers them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

from drover.broker.core.effects import Effect

__all__ = ["CoreTimer"]

# How often a timer due on a term that may not act looks again.
_NOT_SERVING_RECHECK = 0.05


class TimedCore(Protocol):
    """What the timer uses of the core."""

    def next_deadline(self) -> float | None: ...

    def tick(self, now: float | None = None) -> list[Effect]: ...


class CoreTimer:
    def __init__(
        self,
        core: TimedCore,
        *,
        clock: Callable[[], float],
        serving: Callable[[], bool],
        after: Callable[[list[Effect]], None],
    ) -> None:
        self._core = core
        self._clock = clock
        self._serving = serving
        self._after = after
        self._wake = asyncio.Event()
        # The deadline the running task sleeps until (None: none, or firing).
        self._target: float | None = None

    def poke(self) -> None:
        """The core's next deadline may have moved earlier: wake if it did."""
        deadline = self._core.next_deadline()
        target = self._target
        if deadline is not None and (target is None or deadline < target):
            self._wake.set()

    async def run(self) -> None:
        """Fire the core's timers (nack timeouts, delays) until cancelled."""
        while True:
            self._wake.clear()
            deadline = self._core.next_deadline()
            self._target = deadline
            if deadline is None:
                await self._wake.wait()
                continue
            delay = deadline - self._clock()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                continue
            self._target = None
            if not self._serving():
                # Past the lease clock: fire nothing (nack timeouts, delays)
                # until the term has ended and the core is a standby.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_NOT_SERVING_RECHECK):
                        await self._wake.wait()
                continue
            self._after(self._core.tick())

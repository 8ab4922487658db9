"""The worker and operator calls that are core calls: Dequeue (with its
long poll), Nack, OutstandingReset, CancelEvaluation.

:class:`WorkerCalls` serves them for the runtime. Each checks the term
first (``writer_for_call``: a writer, and the lease clock) and maps a core
that is not the leader to NotLeader. Ack and AckBatch, which write before
the core changes, are :mod:`.ack_calls`.

Dequeue takes the best ready evaluation from the core, and if there is none
parks the worker (:class:`~.long_poll.LongPolls`) for at most the wait it
asked for (``poll_timeout``: a default when unset, capped). Once the first
delivery is in hand the batch is filled with what else is ready right then
(still one per job): a batch never waits to fill up. CancelEvaluation
releases the evaluation in memory, then writes the cancellation (a failed
write is retried in the background: the release stands).

Invariants (leader only, at-least-once):

* every hand-out checks the term synchronously first (a writer, and
  ``guard.alive()``): a poll woken after a freeze past the lease returns
  its delivery to the core (a nack) and answers NotLeader, so a delivery
  never leaves a term that may have ended;
* a delivery handed to a poll whose caller went away (cancelled) is given
  back at once (a nack), not stuck until its nack timeout;
* a poll that ends with nothing because the term ended while it waited
  answers NotLeader (go elsewhere), not an empty batch.

Async shell: awaits the long poll; no state of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from drover.broker.core.broker import EvalBroker
from drover.broker.core.delivery import Delivery
from drover.broker.core.effects import Effect, to_writes
from drover.broker.errors import BrokerDisabled
from drover.broker.long_poll import LongPolls
from drover.broker.writer import FencedWriter
from drover.coord.guard import LeaderGuard
from drover.errors import DroverError, InvalidArgument

__all__ = ["PollBounds", "WorkerCalls", "WorkerShell"]

_T = TypeVar("_T")


class PollBounds(Protocol):
    """Dequeue long-poll bounds (seconds): the unset timeout, and the cap."""

    @property
    def default_poll(self) -> float: ...

    @property
    def max_poll(self) -> float: ...


class WorkerShell(Protocol):
    """What the worker calls use of the runtime."""

    @property
    def writer(self) -> FencedWriter | None:
        """The current term's writer; None when not the established leader."""
        ...

    async def writer_for_call(self, wait: float = 0.0) -> FencedWriter: ...

    def after(self, effects: list[Effect]) -> None: ...

    def poke_timer(self) -> None: ...


class WorkerCalls:
    def __init__(
        self,
        shell: WorkerShell,
        core: EvalBroker,
        polls: LongPolls,
        guard: LeaderGuard,
        bounds: PollBounds,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._shell = shell
        self._core = core
        self._polls = polls
        self._guard = guard
        self._bounds = bounds
        self._clock = clock

    def poll_timeout(self, requested: float | None) -> float:
        if requested is None:
            return self._bounds.default_poll
        if requested < 0:
            raise InvalidArgument(f"timeout must not be negative, got {requested}s",
                                  metadata={"field": "timeout"})
        return min(requested, self._bounds.max_poll)

    async def dequeue(self, schedulers: Sequence[str], wait: float,
                      limit: int = 1) -> list[Delivery]:
        """Up to ``limit`` deliveries; waits at most ``wait`` for the first only."""
        if not schedulers or any(not s for s in schedulers):
            raise InvalidArgument("schedulers must name at least one scheduler type, "
                                  "none empty", metadata={"field": "schedulers"})
        shell = self._shell
        core = self._core
        guard = self._guard
        started = self._clock()
        await shell.writer_for_call(wait)
        wait -= self._clock() - started
        first = self._core_call(lambda: core.dequeue(schedulers))
        if first is None and wait > 0:
            waiter = self._polls.park(schedulers)
            try:
                first = await self._polls.wait(waiter, wait)
            except asyncio.CancelledError:
                self._return_unsent(waiter.future)
                raise
            if first is not None and not guard.alive():
                # Handed out just before a freeze, resumed after it: the
                # term is over, so this delivery never leaves.
                self._return_unsent(waiter.future)
                raise guard.not_leader()
            if first is None and (shell.writer is None or not guard.alive()):
                # The term ended while this poll waited and nothing ended it
                # (it parked as the term was revoked): the worker is told
                # to go elsewhere, not handed an empty answer.
                raise guard.not_leader()
        shell.poke_timer()
        if first is None:
            return []
        batch = [first]
        if limit > 1 and shell.writer is not None and guard.alive():
            batch += core.dequeue_many(schedulers, limit - 1)
        return batch

    def _return_unsent(self, future: asyncio.Future[Delivery]) -> None:
        if future.done() and not future.cancelled() and future.exception() is None:
            d = future.result()
            with contextlib.suppress(DroverError):
                self._shell.after(self._core.take_back(d.evaluation.id, d.token))

    async def give_back(self, eval_id: str, token: str) -> None:
        """A worker's Nack: the core takes the delivery back, its effects written."""
        await self._shell.writer_for_call()
        self._shell.after(self._core_call(lambda: self._core.take_back(eval_id, token)))

    async def outstanding_reset(self, eval_id: str, token: str) -> None:
        await self._shell.writer_for_call()
        self._core_call(lambda: self._core.outstanding_reset(eval_id, token))
        self._shell.poke_timer()

    async def cancel(self, eval_id: str, reason: str) -> int:
        """The cancellation's store index (0: nothing to write)."""
        writer = await self._shell.writer_for_call()
        effects = self._core_call(lambda: self._core.cancel(eval_id, reason))
        groups = to_writes(effects)
        try:
            index = await writer.write(groups[0]) if groups else 0
        except DroverError:
            # Released in memory already: keep retrying in the background.
            writer.submit(groups)
            raise
        self._shell.after([])
        return index

    def _core_call(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except BrokerDisabled:
            raise self._guard.not_leader() from None

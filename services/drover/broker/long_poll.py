"""Dequeue long polls: parked workers, handed evaluations first come first served.

A Dequeue that finds nothing ready parks a :class:`Waiter` (its scheduler
types and a future). Whenever the broker may have new work (an enqueue
from the event stream, an ack freeing a job's slot, a timer), the shell
calls :meth:`LongPolls.dispatch`, which walks the parked waiters in arrival
order and hands each the best evaluation of its own scheduler types,
directly: no thundering herd of woken workers racing for one evaluation,
and the oldest waiter is served first (fairness). It stops as soon as
nothing is ready, so a dispatch with no work costs O(1).

Guarantees: a waiter resolves exactly once (a delivery, a timeout, or an
error such as NotLeader when leadership ends). A delivery handed to a
waiter whose caller has gone away is returned by the shell (a nack), so it
is not stuck until its nack timeout.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence

from drover.broker.core.delivery import Delivery
from drover.errors import DroverError

__all__ = ["LongPolls", "Waiter"]

DequeueFn = Callable[[Sequence[str]], Delivery | None]


class Waiter:
    __slots__ = ("future", "schedulers", "seq")

    def __init__(self, seq: int, schedulers: frozenset[str]) -> None:
        self.seq = seq
        self.schedulers = schedulers
        self.future: asyncio.Future[Delivery] = asyncio.get_running_loop().create_future()


class LongPolls:
    def __init__(self) -> None:
        # Insertion-ordered: arrival order.
        self._waiters: dict[int, Waiter] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._waiters)

    def park(self, schedulers: Sequence[str]) -> Waiter:
        waiter = Waiter(next(self._seq), frozenset(schedulers))
        self._waiters[waiter.seq] = waiter
        return waiter

    def unpark(self, waiter: Waiter) -> None:
        self._waiters.pop(waiter.seq, None)

    def dispatch(self, ready: Callable[[], frozenset[str]], dequeue: DequeueFn) -> int:
        """Hand ready evaluations to waiters in arrival order; how many were handed."""
        if not self._waiters:
            return 0
        available = ready()
        if not available:
            return 0
        handed = 0
        for seq, waiter in list(self._waiters.items()):
            if waiter.future.done():
                del self._waiters[seq]
                continue
            if available.isdisjoint(waiter.schedulers):
                continue
            delivery = dequeue(sorted(waiter.schedulers))
            if delivery is not None:
                del self._waiters[seq]
                waiter.future.set_result(delivery)
                handed += 1
            available = ready()
            if not available:
                break
        return handed

    def fail_all(self, err: DroverError) -> None:
        """End every parked poll with ``err`` (leadership ended, shutdown)."""
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            if not waiter.future.done():
                waiter.future.set_exception(err)

    async def wait(self, waiter: Waiter, seconds: float) -> Delivery | None:
        """The delivery handed to ``waiter`` within ``seconds``, or None.

        Raises what :meth:`fail_all` set. On cancellation of the caller a
        delivery that raced in is attached to the CancelledError's waiter
        (``waiter.future``) for the shell to return.
        """
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.shield(waiter.future)
        except TimeoutError:
            pass
        finally:
            self.unpark(waiter)
        future = waiter.future
        if future.done() and not future.cancelled():
            return future.result()
        future.cancel()
        return None

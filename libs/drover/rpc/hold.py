"""The hold timeout: no attempt waits on a server that shows no life.

A backend that is frozen (SIGSTOP, a stalled VM) keeps its sockets open:
its calls neither answer nor fail, and the caller's deadline (or none) was
all that bounded them. A client (the proxy for every forwarded call; the
broker's and watcher's state-replica pools, :mod:`drover.rpc.replicas`)
therefore watches every backend that has attempts in flight:

* any answer from it (a response, a stream message, a status it sent) is a
  sign of life (:meth:`Holds.alive`);
* after ``hold / 2`` without one, it is pinged (health ``Check``, bounded by
  ``hold / 2``: :func:`health_probe`); an answer of any kind is life;
* a ping that gets no answer ends every attempt in flight on that server at
  once (:class:`AttemptEnded`), so no attempt waits more than about
  ``hold`` on a server that stopped answering, whatever the caller's
  deadline. The caller then retries a read on the next server, resumes a
  stream, or answers a write UNAVAILABLE ``OUTCOME_UNKNOWN``.

A long poll on a live server (a blocking query, a Dequeue waiting for
work) is not cut short: its server answers the pings. The hold bounds
silence, not the length of a call.

:meth:`Holds.end` ends a server's attempts for other reasons too: the
proxy's discovery calls it when a server leaves membership.

Invariant: every attempt registered with :meth:`Holds.attempt` is removed
when its ``with`` block exits; a watchdog runs per server only while that
server has attempts in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drover.errors import InvalidArgument, OutcomeUnknown, Unavailable
from drover.tasks import cancel_and_wait

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ``probe(address, timeout)`` -> True if the server answered within ``timeout``.
Probe = Callable[[str, float], Awaitable[bool]]

#: The default hold of internal clients, as the proxy's ``--hold-timeout``.
DEFAULT_HOLD = 3.0


class HoldTimeout(Unavailable):
    """A read's every server stayed silent past the hold: nothing changed; retry."""

    reason = "HOLD_TIMEOUT"


class HoldOutcomeUnknown(OutcomeUnknown):
    """A write's server went silent past the hold: it may have been applied."""


def health_probe(channel_of: Callable[[str], grpc.aio.Channel]) -> Probe:
    """A :data:`Probe` pinging health ``Check`` on ``channel_of(address)``:
    a status the server sent is an answer; a timeout or a broken transport
    is not."""
    async def probe(address: str, within: float) -> bool:
        stub = health_pb2_grpc.HealthStub(channel_of(address))
        try:
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=within)
        except grpc.aio.AioRpcError as err:
            return err.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED,
                                      grpc.StatusCode.UNAVAILABLE)
        return True
    return probe


class AttemptEnded(Exception):
    """The proxy ended an attempt: its server stalled or left membership."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"{address}: {reason}")
        self.address = address
        self.reason = reason


@dataclass(eq=False)
class Attempt:
    address: str
    #: Resolved when the attempt is ended (a plain future: waiting on it
    #: costs no task per call).
    ended: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    reason: str = ""


class Holds:
    """In-flight attempts per backend address, and their watchdogs."""

    def __init__(
        self, probe: Probe, hold: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if hold <= 0:
            raise InvalidArgument(f"hold timeout must be positive, got {hold}")
        self.hold = hold
        self._probe = probe
        self._clock = clock
        self._inflight: dict[str, set[Attempt]] = {}
        self._life: dict[str, float] = {}
        self._watchdogs: dict[str, asyncio.Task[None]] = {}
        #: Attempts ended, by cause: ``hold_timeout`` or ``left_membership`` (metrics).
        self.ended: dict[str, int] = {}

    def inflight(self, address: str) -> int:
        return len(self._inflight.get(address, ()))

    def alive(self, address: str) -> None:
        """``address`` answered something just now."""
        self._life[address] = self._clock()

    @contextlib.contextmanager
    def attempt(self, address: str) -> Iterator[Attempt]:
        """Register one attempt on ``address`` for the duration of the block."""
        a = Attempt(address)
        attempts = self._inflight.setdefault(address, set())
        attempts.add(a)
        if address not in self._watchdogs:
            # Silence is counted from now, not from a stale last answer.
            self._life[address] = max(self._life.get(address, 0.0), self._clock())
            self._watchdogs[address] = asyncio.ensure_future(self._watch(address))
        try:
            yield a
        finally:
            attempts.discard(a)
            if not attempts and self._inflight.get(address) is attempts:
                del self._inflight[address]

    async def wait(self, attempt: Attempt, awaitable: Awaitable[T]) -> T:
        """``awaitable``'s result, or :class:`AttemptEnded` if the attempt is ended first.

        On ending, ``awaitable`` is cancelled (the caller cancels the gRPC
        call too); an answer counts as life of the attempt's server.
        """
        if attempt.ended.done():
            _close(awaitable)
            raise AttemptEnded(attempt.address, attempt.reason)
        work: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        try:
            both: list[asyncio.Future[Any]] = [work, attempt.ended]
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not work.done():
                work.cancel()
        if work.done() and not work.cancelled():
            self.alive(attempt.address)
            return work.result()  # raises the call's own error, if it failed
        raise AttemptEnded(attempt.address, attempt.reason)

    @property
    def ended_count(self) -> int:
        return sum(self.ended.values())

    def end(self, address: str, reason: str, cause: str = "left_membership") -> int:
        """End every attempt in flight on ``address``; how many there were."""
        attempts = self._inflight.pop(address, set())
        for a in attempts:
            a.reason = reason
            if not a.ended.done():
                a.ended.set_result(None)
        if attempts:
            self.ended[cause] = self.ended.get(cause, 0) + len(attempts)
            log.warning("ended %d attempt(s) on %s: %s", len(attempts), address, reason)
        return len(attempts)

    async def _watch(self, address: str) -> None:
        half = self.hold / 2
        try:
            while self._inflight.get(address):
                silent = self._clock() - self._life.get(address, 0.0)
                if silent < half:
                    await asyncio.sleep(half - silent)
                    continue
                if await self._probe(address, half):
                    self.alive(address)
                    continue
                # No answer (a refused connection fails fast): end the attempts
                # once the silence reaches the hold, unless life shows meanwhile.
                left = self._life.get(address, 0.0) + self.hold - self._clock()
                if left > 0:
                    await asyncio.sleep(left)
                    continue
                self.end(address, f"no answer for {self.hold:g}s (hold timeout)",
                         cause="hold_timeout")
        finally:
            self._watchdogs.pop(address, None)
            if not self._inflight.get(address):
                self._life.pop(address, None)  # counted afresh by the next attempt

    async def close(self) -> None:
        # A watchdog only sleeps and probes (each probe bounded by the hold).
        await cancel_and_wait(list(self._watchdogs.values()), within=self.hold,
                              what="holds close")


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)  # an un-awaited coroutine
    if close is not None:
        with contextlib.suppress(Exception):
            close()

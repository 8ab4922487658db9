"""One LeaseKeepAlive stream shared by every one-shot lease keepalive of a
KV: :class:`KeepAliveMux`, under
:meth:`drover.coord.etcd_kv.EtcdKV.lease_keepalive`.

Why: node liveness is one etcd lease per node, renewed by the state service
at each heartbeat. A stream opened for one keepalive and cancelled after its
reply pays for the call's set-up, metadata and cancel every time; on one
long-lived stream a keepalive is one request and one reply, about a third
of the client CPU (``bench/keepalive_bench.py``; the figures are in
``bench/results/issue31/keepalive.json``).
etcd's own Go client does the same: one LeaseKeepAlive stream per client
carries every lease.

How:

* The stream is opened lazily, by the first keepalive (a KV that never
  renews a lease this way holds none), through the factory the KV gives
  (on etcd: a require-leader stream of the endpoint pool, on the member
  in use).
* A keepalive registers its waiter, a future, in the stream's
  :class:`~drover.coord.keepalive_match.PendingKeepAlives` (replies matched
  by lease ID, then by count: the pure part) and queues its request without
  awaiting (the stream writes queued requests in order, one at a time, as
  gRPC requires of a stream). One reader task per stream hands each reply to
  the waiter it answers.
* Sessions keep keepalive streams of their own
  (:meth:`~drover.coord.etcd_kv.EtcdKV.keepalives`): a leader's renewals
  must not queue behind thousands of node keepalives.

Guarantees:

* **Bounded.** A call ends within its bound (``within``: the KV's timeout,
  clipped to the caller's deadline) with
  :class:`~drover.coord.errors.EtcdUnavailable`, or on its own cancel; its
  waiter is removed either way. The bound is a timer on the waiter's future,
  not a cancel of the caller's task.
* **A dead stream fails its waiters at once.** When the stream fails or
  ends, every waiter of it gets :class:`EtcdUnavailable` (never a hang) and
  the next call opens a new stream (on the endpoint then in use). No
  background reconnect: an idle KV never dials.
* **A slow stream is checked.** A keepalive unanswered after
  ``suspect_after`` (the pool's request bound, as for unary calls) has its
  member probed now: a bad member's streams are aborted, which fails their
  waiters at once. A stream that gave no reply at all while a caller waited
  its whole own bound (not a shorter caller deadline) is stuck: it is
  retired, and the next call opens a fresh one.
* **Gone leases.** A reply with TTL <= 0 is
  :class:`~drover.coord.kv.LeaseNotFound` for that caller only.
* **Close.** :meth:`close` fails the waiters with
  :class:`~drover.coord.errors.ClientClosed`, cancels the stream and waits,
  bounded, for its reader; a later call raises ClientClosed.

The trade-off: etcd serves one stream's requests one after another (each a
lease renewal; on a follower, forwarded to the leader), where separate
streams were served side by side. A renewal etcd is slow to make delays the
ones behind it on the stream: the waiters' bound and the suspect probe above
are what limit that.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Protocol

from drover.coord.errors import ClientClosed, EtcdUnavailable
from drover.coord.keepalive_match import PendingKeepAlives
from drover.coord.kv import LeaseNotFound
from drover.tasks import cancel_and_wait

__all__ = ["KeepAliveMux", "KeepAliveStream"]


class KeepAliveStream(Protocol):
    """One LeaseKeepAlive stream as the multiplexer drives it."""

    #: Seconds a request may go unanswered before the member is suspect
    #: (``math.inf``: never).
    suspect_after: float

    def send(self, lease: int) -> None:
        """Queue one keepalive request of ``lease`` (never waits)."""
        ...

    async def recv(self) -> tuple[int, int] | None:
        """The next reply, ``(lease ID, TTL)``; None when the stream ended.
        A failed stream raises (any ``Exception``)."""
        ...

    def suspect(self) -> None:
        """Have the stream's member probed now."""
        ...

    def cancel(self) -> None: ...


class _Shared:
    """One opened stream, its waiters and its reader."""

    __slots__ = ("pending", "reader", "replies", "retired", "stream")

    def __init__(self, stream: KeepAliveStream) -> None:
        self.stream = stream
        self.pending: PendingKeepAlives[asyncio.Future[int]] = PendingKeepAlives()
        self.reader: asyncio.Task[None] | None = None
        #: Replies read so far (a waiter's bound tells a stuck stream by it).
        self.replies = 0
        self.retired = False


class KeepAliveMux:
    """Lease keepalives multiplexed on one stream at a time (see the module)."""

    def __init__(self, open_stream: Callable[[], KeepAliveStream], *, timeout: float,
                 stop_timeout: float = 2.0, name: str = "lease-keepalive") -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self._open_stream = open_stream
        self._timeout = timeout
        self._stop_timeout = stop_timeout
        self._name = name
        self._current: _Shared | None = None
        self._readers: set[asyncio.Task[None]] = set()
        self._closed = False
        #: Streams opened so far (tests, benches).
        self.opened = 0

    @property
    def waiting(self) -> int:
        """Callers waiting for a reply now."""
        return len(self._current.pending) if self._current is not None else 0

    async def keepalive(self, lease: int, within: float | None = None) -> int:
        """Renew ``lease`` within ``within`` seconds (None: the timeout given
        at construction); its TTL. :class:`LeaseNotFound` if it is gone,
        :class:`EtcdUnavailable` if the stream failed or did not answer in
        time, :class:`ClientClosed` after :meth:`close`."""
        if self._closed:
            raise ClientClosed("the lease keepalive stream was closed")
        within = self._timeout if within is None else within
        if within <= 0:
            raise EtcdUnavailable("etcd lease keepalive: the caller's deadline has passed")
        s = self._current or self._open()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        s.pending.add(lease, fut)
        try:
            s.stream.send(lease)
        except Exception as err:
            s.pending.drop(lease, fut)
            self._retire(s, f"the lease keepalive stream failed: {err}", err)
            raise EtcdUnavailable(f"the lease keepalive stream failed: {err}") from err
        now = loop.time()
        deadline = now + within
        suspect = s.stream.suspect_after < within
        timer: list[asyncio.TimerHandle] = []
        timer.append(loop.call_at(
            now + s.stream.suspect_after if suspect else deadline, self._late,
            s, lease, fut, suspect, deadline, within, within >= self._timeout, s.replies, timer))
        try:
            ttl = await fut
        finally:
            timer[0].cancel()
            if fut.cancelled():  # the caller's own cancel: no longer waiting
                s.pending.drop(lease, fut)
        if ttl <= 0:
            raise LeaseNotFound(lease)
        return ttl

    def _late(self, s: _Shared, lease: int, fut: asyncio.Future[int], suspect: bool,
              deadline: float, within: float, own: bool, replies: int,
              timer: list[asyncio.TimerHandle]) -> None:
        """A waiter's timer: first (``suspect``) the member is probed, then
        at ``deadline`` the waiter gives up."""
        if fut.done():
            return
        if suspect:
            s.stream.suspect()
            timer[0] = fut.get_loop().call_at(deadline, self._late, s, lease, fut, False,
                                              deadline, within, own, replies, timer)
            return
        s.pending.drop(lease, fut)
        fut.set_exception(EtcdUnavailable(
            f"etcd did not answer a lease keepalive within {within:g}s"))
        if own and s.replies == replies and not s.retired:
            s.stream.suspect()
            self._retire(s, f"the lease keepalive stream gave no reply for {within:g}s")

    def _open(self) -> _Shared:
        s = _Shared(self._open_stream())  # raises ClientClosed when the client is
        self.opened += 1
        # A context of its own: the reader outlives the call that opened the
        # stream, whose deadline and trace are not the reader's.
        s.reader = asyncio.create_task(self._read(s), name=f"{self._name}-{self.opened}",
                                       context=contextvars.Context())
        self._readers.add(s.reader)
        s.reader.add_done_callback(self._readers.discard)
        self._current = s
        return s

    async def _read(self, s: _Shared) -> None:
        reason, cause = "etcd closed the lease keepalive stream", None
        try:
            while True:
                got = await s.stream.recv()
                if got is None:
                    break
                lease, ttl = got
                s.replies += 1
                for fut in s.pending.answer(lease):
                    if not fut.done():
                        fut.set_result(ttl)
        except Exception as err:
            reason, cause = f"the lease keepalive stream failed: {err}", err
        finally:
            self._retire(s, reason, cause)

    def _retire(self, s: _Shared, reason: str, cause: BaseException | None = None,
                error: type[EtcdUnavailable] = EtcdUnavailable) -> None:
        """End stream ``s``: its waiters fail with ``error(reason)``; the next
        call opens a new stream."""
        if self._current is s:
            self._current = None
        if s.retired:
            return
        s.retired = True
        for fut in s.pending.clear():
            if not fut.done():
                exc = error(reason)
                exc.__cause__ = cause
                fut.set_exception(exc)
        s.stream.cancel()
        if s.reader is not None and s.reader is not asyncio.current_task():
            s.reader.cancel()

    async def close(self) -> None:
        """Fail the waiters (:class:`ClientClosed`), end the stream and its
        reader (bounded); later calls raise ClientClosed. Idempotent."""
        self._closed = True
        if self._current is not None:
            self._retire(self._current, "the etcd KV was closed", error=ClientClosed)
        await cancel_and_wait(list(self._readers), within=self._stop_timeout,
                              what=f"{self._name} close")


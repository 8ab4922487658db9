"""A session: one etcd lease, kept alive over one LeaseKeepAlive stream.

It runs on any :class:`~drover.coord.kv.Leases` (etcd through
:class:`~drover.coord.etcd_kv.EtcdKV`, or :class:`~drover.coord.memkv.MemoryKV`
on a virtual clock): one keepalive stream (require-leader on etcd), a
request every TTL/6, replies matched to requests in order.

Timing guarantees, all on the monotonic clock and measured from the *send*
time of the request a reply answers (never from the receive time: a reply
that sat in a buffer while the process was paused proves nothing about now):

* ``expires_at`` = send time + granted TTL of the newest answered request.
  etcd cannot expire the lease before it (etcd starts its TTL when it
  receives the request, which is after we sent it).
* ``act_until`` = send time + ``act_fraction`` x TTL (2/3 by default). Past
  it, :attr:`Session.unsafe` fires: leaders stop acting with a third of the
  TTL to spare for clock drift and in-flight writes.
* Surviving an etcd leader election: while etcd elects (about 1-2 s with its
  default 1 s election timeout) and the client moves to a member that has a
  leader (about 1 s), no renewal is answered. The gap that costs nothing is
  ``TTL x (act_fraction - renew_fraction)``: the last answered renewal may
  be a whole renew interval old when the trouble starts. With the defaults
  (TTL 10 s, act 2/3, renew 1/6) that is 5 s against a budget of
  :data:`ELECTION_BUDGET` = 3 s; :func:`election_warning` says when given
  values leave less (checked at startup by :class:`~drover.coord.Leadership`).
  etcd itself does not expire leases across an election: a new leader
  extends every lease by its TTL.
* :attr:`Session.lost` fires when ``expires_at`` passes without renewal or
  a reply carries TTL <= 0 (the lease is gone). A lost session is over; the
  owner opens a new one.
* The first deadlines use the TTL asked for: etcd may grant more (it raises
  a TTL below its minimum), never less, so they are on the safe side until
  the first keepalive reply brings the granted TTL.

:class:`LeaseClock` is the pure core; :class:`Session` the async shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque

from drover.coord.clock import Clock, monotonic
from drover.coord.deadline import caller_deadline
from drover.coord.errors import ClientClosed, EtcdUnavailable, LeaseNotFound, SessionLost
from drover.coord.kv import KeepAlives, Leases
from drover.tasks import cancel_and_wait

__all__ = ["DEFAULT_TTL", "ELECTION_BUDGET", "LeaseClock", "Session", "election_warning"]

log = logging.getLogger(__name__)

DEFAULT_TTL = 10
ACT_FRACTION = 2 / 3
#: A keepalive every TTL x this.
RENEW_FRACTION = 1 / 6
#: Seconds without any answered renewal a session must survive: an etcd
#: leader election (≈1-2 s at etcd's default 1 s election timeout) plus the
#: client moving to a member that has a leader (≈1 s).
ELECTION_BUDGET = 3.0


def election_warning(ttl: float, act_fraction: float = ACT_FRACTION, *,
                     renew_fraction: float = RENEW_FRACTION,
                     budget: float = ELECTION_BUDGET) -> str | None:
    """Why a session of these values would lose leadership to a routine etcd
    leader election, or None if it survives one. Pure."""
    margin = ttl * (act_fraction - renew_fraction)
    if margin >= budget:
        return None
    need = budget / (act_fraction - renew_fraction) if act_fraction > renew_fraction else None
    hint = f"; use a session TTL of at least {math.ceil(need)} s" if need else ""
    return (f"session TTL {ttl:g} s with act fraction {act_fraction:.2f} tolerates "
            f"{max(margin, 0):.1f} s without a renewal, less than an etcd leader election "
            f"plus failover (~{budget:g} s): an election will cost leadership{hint}")


class LeaseClock:
    """Deadlines of one lease. Pure: the caller passes ``now`` in."""

    def __init__(self, ttl: float, granted_sent_at: float, *,
                 act_fraction: float = ACT_FRACTION,
                 renew_fraction: float = RENEW_FRACTION) -> None:
        if ttl <= 0:
            raise ValueError(f"lease TTL must be positive, got {ttl}")
        if not 0 < act_fraction <= 1:
            raise ValueError(f"act_fraction must be in (0, 1], got {act_fraction}")
        self.ttl = ttl
        self.interval = ttl * renew_fraction
        self.act_fraction = act_fraction
        self.expires_at = granted_sent_at + ttl
        self.act_until = granted_sent_at + ttl * act_fraction
        self.last_sent = granted_sent_at
        self.gone = False
        self._pending: deque[float] = deque()

    @property
    def next_send_at(self) -> float:
        return self.last_sent + self.interval

    def on_send(self, now: float) -> None:
        self.last_sent = now
        self._pending.append(now)

    def on_reply(self, ttl: int, now: float) -> None:
        """A keepalive reply; ``ttl <= 0`` means etcd no longer has the lease."""
        sent = self._pending.popleft() if self._pending else None
        if ttl <= 0:
            self.gone = True
            return
        if sent is None:
            return  # unmatched (stream reset raced a reply): proves nothing
        self.expires_at = max(self.expires_at, sent + ttl)
        self.act_until = max(self.act_until, sent + ttl * self.act_fraction)

    def stream_reset(self) -> None:
        """Requests on a broken stream will never be answered: forget them,
        and renew at once on the next stream (the broken one may have been
        silent for a while; waiting a whole interval more could cost the
        lease)."""
        self._pending.clear()
        self.last_sent = -math.inf

    def oldest_pending(self) -> float | None:
        """Send time of the oldest unanswered request."""
        return self._pending[0] if self._pending else None

    def unsafe(self, now: float) -> bool:
        return self.gone or now >= self.act_until

    def lost(self, now: float) -> bool:
        return self.gone or now >= self.expires_at

    def remaining(self, now: float) -> float:
        return self.expires_at - now


class Session:
    """An etcd lease kept alive in the background. Use :meth:`open`."""

    def __init__(self, kv: Leases, lease_id: int, ttl: int, core: LeaseClock,
                 clock: Clock) -> None:
        self.kv = kv
        self.lease_id = lease_id
        self.ttl = ttl
        self.lost = asyncio.Event()
        self.unsafe = asyncio.Event()
        self.lost_reason = ""
        self._core = core
        self._clock = clock
        self._kick = asyncio.Event()
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        # The keepalive stream's reader (the keepalive task's child; its
        # finally cancels it, close waits for both).
        self._reader: asyncio.Task[None] | None = None
        # A keepalive unanswered this long makes its member suspect (the
        # pool probes it at once and moves if it does not answer).
        self._silent_after = kv.suspect_after

    @property
    def lease_hex(self) -> str:
        return f"{self.lease_id:x}"

    @property
    def expires_at(self) -> float:
        return self._core.expires_at

    @property
    def act_until(self) -> float:
        return self._core.act_until

    @classmethod
    async def open(cls, kv: Leases, ttl: int = DEFAULT_TTL, *,
                   clock: Clock = monotonic, act_fraction: float = ACT_FRACTION) -> Session:
        if ttl <= 0:
            raise ValueError(f"session TTL must be positive, got {ttl}")
        sent = clock()
        try:
            # retried on another member within the TTL (an orphaned lease expires)
            with caller_deadline(ttl):
                async with asyncio.timeout(ttl):
                    lease = await kv.lease_grant(ttl)
        except TimeoutError as e:
            raise EtcdUnavailable(f"lease grant failed: {e!r}") from e
        except EtcdUnavailable as e:
            raise EtcdUnavailable(f"lease grant failed: {e}") from e
        core = LeaseClock(ttl, sent, act_fraction=act_fraction)
        session = cls(kv, lease, ttl, core, clock)
        session._task = asyncio.create_task(session._keepalive(), name=f"lease-{lease:x}")
        return session

    def safe(self, now: float) -> bool:
        """True while a holder may still act, judged synchronously at ``now``.

        Unlike :attr:`unsafe`, which the keepalive task sets when it next
        runs, this reads the lease clock itself: a process that was frozen
        past ``act_until`` and has just woken sees False before any other
        task has had a chance to run.
        """
        return not self.unsafe.is_set() and not self._core.unsafe(now)

    def check(self) -> None:
        """Raise :class:`SessionLost` if the session may no longer be relied on."""
        if self.lost.is_set() or self.unsafe.is_set():
            raise SessionLost(f"session {self.lease_hex} lost: {self.lost_reason or 'unsafe'}")

    async def wait_lost(self) -> None:
        await self.lost.wait()

    async def close(self, *, revoke: bool = True, grace: float = 1.0) -> None:
        """Stop renewing and (best effort) revoke the lease: each step bounded
        by ``grace`` (a keepalive task that ignores its cancel is left behind,
        logged; the lease is revoked all the same)."""
        self._closed = True
        self._fire_lost("closed")
        await cancel_and_wait((self._task, self._reader), within=grace,
                              what=f"session {self.lease_hex} close")
        if revoke:
            try:
                with caller_deadline(grace):
                    async with asyncio.timeout(grace):
                        await self.kv.lease_revoke(self.lease_id)
            except (TimeoutError, EtcdUnavailable, LeaseNotFound) as e:
                log.info("lease %s revoke failed (it will expire): %r", self.lease_hex, e)

    def _fire_lost(self, reason: str) -> None:
        if not self.lost.is_set():
            self.lost_reason = reason
            if not self._closed:
                log.warning("session %s lost: %s", self.lease_hex, reason)
            self.unsafe.set()
            self.lost.set()

    async def _read(self, call: KeepAlives) -> None:
        try:
            async for ttl in call:
                self._core.on_reply(ttl, self._clock())
                self._kick.set()
        except EtcdUnavailable as e:
            log.info("keepalive stream of %s broke: %r", self.lease_hex, e)
        finally:  # also when the call was cancelled locally after a failed write
            self._core.stream_reset()
            self._kick.set()

    async def _keepalive(self) -> None:
        call: KeepAlives | None = None
        reader: asyncio.Task[None] | None = None
        suspected: float | None = None
        core = self._core
        try:
            while True:
                now = self._clock()
                if core.gone:
                    self._fire_lost("lease is gone (keepalive TTL <= 0)")
                    return
                if core.lost(now):
                    self._fire_lost(f"no renewal within TTL {self.ttl}s")
                    return
                if core.unsafe(now) and not self.unsafe.is_set():
                    log.warning("session %s: no renewal for %.0f%% of TTL; stop acting",
                                self.lease_hex, core.act_fraction * 100)
                    self.unsafe.set()
                if reader is not None and reader.done():
                    call, reader = None, None
                    await asyncio.sleep(min(0.1, core.interval / 4))  # reconnect backoff
                    continue
                if call is None:
                    try:
                        # Require-leader on etcd: a member cut off from the raft
                        # leader ends the stream instead of silently not renewing.
                        call = self.kv.keepalives(self.lease_id)
                    except ClientClosed:
                        # The client was closed under a live session (the
                        # owner skipped close()): the lease can only expire.
                        self._fire_lost("the etcd client was closed")
                        return
                    reader = self._reader = asyncio.create_task(
                        self._read(call), name=f"lease-{self.lease_hex}-reader")
                oldest = core.oldest_pending()
                if (oldest is not None and oldest != suspected
                        and now - oldest >= self._silent_after):
                    suspected = oldest
                    call.suspect()  # keepalive unanswered: have the pool probe its member
                if now >= core.next_send_at:
                    core.on_send(now)
                    try:
                        async with asyncio.timeout(core.interval):
                            await call.send()
                    except (TimeoutError, EtcdUnavailable) as e:
                        log.info("keepalive write of %s failed: %r", self.lease_hex, e)
                        call.cancel()
                oldest = core.oldest_pending()
                wake = min(core.next_send_at, core.expires_at,
                           math.inf if self.unsafe.is_set() else core.act_until,
                           math.inf if oldest is None or oldest == suspected else
                           oldest + self._silent_after)
                self._kick.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, wake - self._clock())):
                        await self._kick.wait()
        finally:
            if call is not None:
                call.cancel()
            if reader is not None:
                # Not awaited here (a reader stuck on a stream that ignores
                # its cancel would hold this task too): close waits, bounded.
                reader.cancel()

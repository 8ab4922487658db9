"""The watch-fed token and policy cache every server keeps (async shell).

An initial read of the ACL keyspace at revision R, then one etcd watch from
R + 1 (:class:`drover.coord.ResilientWatch`: resumes after errors,
re-lists after compaction), applied to an :class:`AclState`. A revoked
token is refused by every replica as soon as its delete event arrives:
milliseconds on a healthy cluster, and the watch's liveness probe bounds a
silent stall. Until the first listing is applied :attr:`ready` is unset and
the interceptor answers UNAVAILABLE rather than judge with no data.

A watch that stalls (etcd frozen, a partition) must not leave a revoked
token working forever: every ``check_interval`` a confirm task proves the
view current with one linearizable summary read of the ACL prefix (see
:mod:`drover.acl.freshness` for why that read, and not the watch's events,
is the proof) and dates :attr:`freshness` to the read's start. Past
``max_stale`` without a proof the interceptor refuses (down policy
``deny``); the next proof after etcd answers again restores service, with
no operator action. The confirm task never blocks on etcd longer than
``check_timeout`` per attempt.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from drover.acl.freshness import Freshness, proves_current
from drover.acl.tokens import AclKeys, AclState
from drover.config import AclSettings
from drover.coord.clock import Clock, monotonic
from drover.coord.deadline import caller_deadline
from drover.coord.errors import EtcdUnavailable
from drover.coord.kv import Newest, Summaries
from drover.coord.watch import ResilientWatch, WatchKV
from drover.coord.watch_buffer import EventType, Resync
from drover.tasks import cancel_and_wait

__all__ = ["AclCache", "AclKV"]

log = logging.getLogger(__name__)


class AclKV(WatchKV, Newest, Summaries, Protocol):
    """What the cache needs of etcd: a resilient watch, the newest key, and
    the prefix's summary (to prove the view current)."""


class AclCache:
    def __init__(self, kv: AclKV, keys: AclKeys, server_secret: str = "", *,
                 settings: AclSettings | None = None, clock: Clock = monotonic) -> None:
        self.state = AclState(keys, server_secret)
        self.ready = asyncio.Event()
        self.settings = settings or AclSettings()
        self.freshness = Freshness(self.settings, clock)
        self._clock = clock
        self._kv = kv
        self._applied = asyncio.Event()
        self._inflight: asyncio.Future[bool] | None = None
        self._watch = ResilientWatch(kv, keys.prefix.encode())
        self._task: asyncio.Task[None] | None = None
        self._confirm_task: asyncio.Task[None] | None = None
        # Every key of the view, decodable or not: the count the proof compares.
        self._keys: set[bytes] = set()
        self._started_at = clock()

    async def start(self) -> AclCache:
        self._started_at = self._clock()  # the first listing's read starts after this
        await self._watch.start()
        self._task = asyncio.create_task(self._apply(), name="acl-cache")
        self._confirm_task = asyncio.create_task(self._confirm_forever(), name="acl-confirm")
        return self

    async def _apply(self) -> None:
        async for msg in self._watch:
            if isinstance(msg, Resync):
                self.state.reset(msg.revision)
                self._keys.clear()
                for kv in msg.items:
                    self._put(kv.key, kv.value)
                if not self.ready.is_set():
                    # The first listing is a linearizable read begun after start().
                    self.freshness.mark_current(self._started_at)
                self.ready.set()
                self._applied.set()
                continue
            for ev in msg.events:
                if ev.type is EventType.DELETE:
                    self._keys.discard(ev.kv.key)
                    self.state.delete(ev.kv.key.decode())
                else:
                    self._put(ev.kv.key, ev.kv.value)
            self.state.revision = msg.revision
            self._applied.set()

    # -- proving the view current --------------------------------------------

    async def confirm(self) -> bool:
        """Prove the view current as of now (one summary read, then waiting
        for the watch to apply what it showed), within ``check_timeout``.
        True: :attr:`freshness` is marked at this call's start."""
        started = self._clock()
        within = self.settings.check_timeout
        try:
            with caller_deadline(within):
                async with asyncio.timeout(within):
                    seen = await self._kv.summary(self._watch.prefix, self._watch.range_end)
                    while not (self.ready.is_set() and proves_current(
                            applied=self.state.revision, view_keys=len(self._keys),
                            read_revision=seen.revision, newest=seen.newest,
                            count=seen.count)):
                        self._applied.clear()
                        await self._applied.wait()
        except (TimeoutError, EtcdUnavailable) as e:
            log.debug("ACL view not confirmed current: %r", e)
            return False
        self.freshness.mark_current(started)
        return True

    async def _confirm_forever(self) -> None:
        was_stale = False
        while True:
            await self.confirm()
            stale = self.freshness.stale
            if stale != was_stale:
                age = self.freshness.staleness()
                if stale:
                    log.warning(
                        "ACL view stale: not confirmed current with etcd for %.0fs (bound "
                        "%gs); down policy %r: %s", age, self.settings.max_stale,
                        self.settings.down_policy,
                        "judging with the cached view (revocations wait for etcd)"
                        if self.freshness.extends_cache
                        else "refusing calls that need a capability (ACL_DATA_STALE)")
                else:
                    log.info("ACL view current again; serving")
                was_stale = stale
            await asyncio.sleep(self.settings.check_interval)

    async def catch_up(self, within: float = 1.0) -> bool:
        """Wait until this cache has applied the newest ACL key in etcd.

        Asked before refusing an unknown token: a token created a moment
        ago through another replica is then found, not refused (read your
        write across replicas). A deleted token needs no wait: its absence
        is the answer. Single-flight: concurrent misses (a flood of bogus
        tokens) share one keys-only read of the small ACL prefix, so they
        cost etcd one request at a time per replica, not one each.
        """
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.ensure_future(self._catch_up(within))
        return await asyncio.shield(self._inflight)

    async def _catch_up(self, within: float) -> bool:
        try:
            with caller_deadline(within):
                async with asyncio.timeout(within):
                    last = await self._kv.newest(self._watch.prefix, self._watch.range_end)
                    newest = last.mod_revision if last is not None else 0
                    while self.state.revision < newest:
                        self._applied.clear()
                        await self._applied.wait()
        except (TimeoutError, EtcdUnavailable):
            return False
        return True

    def _put(self, key: bytes, value: bytes) -> None:
        self._keys.add(key)
        try:
            self.state.put(key.decode(), value)
        except Exception as e:  # a corrupt value must not stop the cache
            log.warning("ignoring undecodable ACL key %r: %s", key[:200], type(e).__name__)

    async def close(self) -> None:
        await cancel_and_wait((self._confirm_task, self._task),
                              within=self._watch.config.stop_timeout, what="acl cache close")
        await self._watch.close()

"""The watch-fed token and policy cache every server keeps (async shell).

An initial read of the ACL keyspace at revision R, then one etcd watch from
R + 1 (:class:`drover.coord.ResilientWatch`: resumes after errors,
re-lists after compaction), applied to an :class:`AclState`. A revoked
token is refused by every replica as soon as its delete event arrives:
milliseconds on a healthy cluster, and the watch's liveness probe bounds a
silent stall. Until the first listing is applied :attr:`ready` is unset and
the interceptor answers UNAVAILABLE rather than judge with no data.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from drover.acl.tokens import AclKeys, AclState
from drover.coord.deadline import caller_deadline
from drover.coord.errors import EtcdUnavailable
from drover.coord.kv import Newest
from drover.coord.watch import ResilientWatch, WatchKV
from drover.coord.watch_buffer import EventType, Resync

__all__ = ["AclCache", "AclKV"]

log = logging.getLogger(__name__)


class AclKV(WatchKV, Newest, Protocol):
    """What the cache needs of etcd: a resilient watch, and the newest key."""


class AclCache:
    def __init__(self, kv: AclKV, keys: AclKeys, server_secret: str = "") -> None:
        self.state = AclState(keys, server_secret)
        self.ready = asyncio.Event()
        self._kv = kv
        self._applied = asyncio.Event()
        self._inflight: asyncio.Future[bool] | None = None
        self._watch = ResilientWatch(kv, keys.prefix.encode())
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> AclCache:
        await self._watch.start()
        self._task = asyncio.create_task(self._apply(), name="acl-cache")
        return self

    async def _apply(self) -> None:
        async for msg in self._watch:
            if isinstance(msg, Resync):
                self.state.reset(msg.revision)
                for kv in msg.items:
                    self._put(kv.key, kv.value)
                self.ready.set()
                self._applied.set()
                continue
            for ev in msg.events:
                if ev.type is EventType.DELETE:
                    self.state.delete(ev.kv.key.decode())
                else:
                    self._put(ev.kv.key, ev.kv.value)
            self.state.revision = msg.revision
            self._applied.set()

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
        try:
            self.state.put(key.decode(), value)
        except Exception as e:  # a corrupt value must not stop the cache
            log.warning("ignoring undecodable ACL key %r: %s", key[:200], type(e).__name__)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        await self._watch.close()

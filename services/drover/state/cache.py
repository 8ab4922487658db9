"""One replica's watch-fed cache of every object (the informer pattern).

Start: a paged range read of ``<root>/v1/`` at one revision R (etcd refuses
responses over 4 MiB, so pages of ``page_size`` keys with a moving start key,
all pinned at R), then one watch from R+1 for the whole prefix. Every change
is applied in revision order to :class:`~drover.state.tables.Tables` and
handed to listeners (the event stream). If the watch breaks it resumes from
the last applied revision; if that is compacted, the cache re-lists and
tells listeners to reset.

Consistent reads: every object write of the state service also puts the
marker key ``<root>/v1/state/revision`` in the same txn, so the marker's
mod_revision is the revision of the last object change. :meth:`Cache.sync`
reads it linearizably (one small Get) and waits until the cache has applied
it. This is exact, unlike etcd 3.4's progress notifications, which may
overtake events still queued on the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from drover.errors import Unavailable
from drover.state import codec
from drover.state.blocking import IndexWaiters
from drover.state.contact import ContactStore
from drover.state.store import Compacted, KVStore, Put, WatchBatch, prefix_end
from drover.state.tables import Tables

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    namespace: str
    id: str
    revision: int
    deleted: bool
    value: bytes
    create_revision: int


@dataclass(frozen=True)
class CacheConfig:
    page_size: int = 5000
    sync_timeout: float = 10.0
    retry_delay: float = 0.5


Listener = Callable[[int, list[Change]], None]
ResetListener = Callable[[int], None]


def marker_key(keys: codec.KeyCodec) -> bytes:
    return f"{keys.base}state/revision".encode()


def marker_put(keys: codec.KeyCodec) -> Put:
    """The op every object-writing txn adds (see the module docstring)."""
    return Put(marker_key(keys), b"")


class Cache:
    def __init__(
        self,
        store: KVStore,
        keys: codec.KeyCodec,
        config: CacheConfig = CacheConfig(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # Every etcd call goes through here, so last_contact sees all of them.
        self.store = ContactStore(store, clock)
        self.keys = keys
        self.config = config
        self._clock = clock
        self.tables = Tables(keys)
        self.applied = IndexWaiters()
        self.table_waiters = {kind: IndexWaiters() for kind in codec.MESSAGES}
        self.ready = asyncio.Event()
        self.listeners: list[Listener] = []
        self.reset_listeners: list[ResetListener] = []
        self._task: asyncio.Task[None] | None = None
        self._prefix = keys.base.encode()
        self._marker = marker_key(keys)
        # The revision at which the current tables were listed: history at or
        # before it is not replayable from the cache.
        self.listed_at = 0

    @property
    def revision(self) -> int:
        return self.tables.revision

    def last_contact(self) -> float:
        """Seconds since this replica last heard from etcd (any successful call)."""
        return self.store.age()

    async def start(self) -> None:
        """List, then watch in the background; returns once listed."""
        await self._list()
        self._task = asyncio.create_task(self._run(), name="state-cache-watch")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _list(self) -> None:
        tables = Tables(self.keys)
        end = prefix_end(self._prefix)
        start, rev = self._prefix, 0
        while True:
            page = await self.store.range(start, end, limit=self.config.page_size, revision=rev)
            rev = rev or page.revision
            tables.stage(page.kvs)
            if not page.more or not page.kvs:
                break
            start = page.kvs[-1].key + b"\0"
        tables.load_staged()
        tables.advance(rev)
        for table in tables.tables.values():
            table.index = max(table.index, rev) if table.index == 0 else table.index
        self.tables = tables
        self.listed_at = rev
        self._touch()
        self._advance_all(rev)
        self.ready.set()

    def _advance_all(self, rev: int) -> None:
        self.applied.advance(rev)
        for kind, table in self.tables.tables.items():
            self.table_waiters[kind].advance(table.index)

    def _touch(self) -> None:
        self.store.touch()

    async def _run(self) -> None:
        end = prefix_end(self._prefix)
        while True:
            try:
                watch = await self.store.watch(self._prefix, end, self.revision + 1)
                try:
                    async for batch in watch:
                        self._touch()
                        self._apply(batch)
                finally:
                    await watch.close()
            except Compacted:
                log.warning("state cache fell behind a compaction at %d; re-listing", self.revision)
                await self._relist()
            except Unavailable as err:
                log.warning("state cache watch broke (%s); resuming", err)
                await asyncio.sleep(self.config.retry_delay)

    async def _relist(self) -> None:
        while True:
            try:
                await self._list()
                for reset in self.reset_listeners:
                    reset(self.revision)
                return
            except Unavailable as err:
                log.warning("state cache re-list failed (%s); retrying", err)
                await asyncio.sleep(self.config.retry_delay)

    def _apply(self, batch: WatchBatch) -> None:
        changes: list[Change] = []
        touched: set[str] = set()
        for ev in batch.events:
            kv = ev.kv
            got = self.tables.apply(kv.key, kv.value, kv.create_revision, kv.mod_revision,
                                    ev.deleted)
            if got is None:
                continue
            ok, old = got
            touched.add(ok.kind)
            create = kv.create_revision if not ev.deleted else (old[2][0] if old else 0)
            changes.append(Change(ok.kind, ok.namespace, ok.id, kv.mod_revision, ev.deleted,
                                  kv.value, create))
        self.tables.advance(batch.revision)
        if changes:
            for listener in self.listeners:
                listener(self.revision, changes)
        for kind in touched:
            self.table_waiters[kind].advance(self.tables[kind].index)
        self.applied.advance(self.revision)

    async def wait_for_revision(self, revision: int, within: float | None = None) -> None:
        """Return once the cache has applied ``revision``; Unavailable after
        ``within`` seconds (default ``sync_timeout``)."""
        if self.revision >= revision:
            return
        wait = self.config.sync_timeout if within is None else within
        if not await self.applied.wait(revision - 1, wait):
            raise Unavailable(
                f"this state replica's cache is at revision {self.revision}, behind etcd's "
                f"{revision}; retry, or read with stale=true"
            )

    async def sync(self) -> int:
        """Catch up to the last object write in etcd (a consistent read)."""
        page = await self.store.range(self._marker, b"")
        self._touch()
        target = page.kvs[0].mod_revision if page.kvs else 0
        await self.wait_for_revision(target)
        return target

"""One replica's watch-fed cache of every object (the informer pattern).

Start: a paged range read of ``<root>/v1/`` at one revision R (etcd refuses
responses over 4 MiB, so pages of ``page_size`` keys, all pinned at R, in
bounded key windows: see :mod:`drover.state.core.windows`), then one watch from
R+1 for the whole prefix. Every change is applied in revision order to
:class:`~drover.state.core.tables.Tables` and handed to listeners (the event
stream). If the watch breaks it resumes from the last applied revision; if
that is compacted, the cache re-lists and tells listeners to reset.

Consistent reads: every object write of the state service also puts the
marker key ``<root>/v1/state/revision`` in the same txn, so the marker's
mod_revision is the revision of the last object change. :meth:`Cache.sync`
reads it linearizably (one small Get) and waits until the cache has applied
it. This is exact, unlike etcd 3.4's progress notifications, which may
overtake events still queued on the stream.

Garbage collection: cached entries are acyclic (reference counting frees
them), so a full collection would only walk millions of live objects for
nothing. After a list of at least ``CacheConfig.freeze_min_objects`` the
cache freezes what is alive (:func:`gc.freeze`); the collector is off
during the list; a first list freezes without collecting, a re-list
unfreezes and collects once (the replaced tables' few cycles), then
freezes again; growth through the watch is frozen again every
``CacheConfig.freeze_every_events`` applied events, after one collection
of what arrived since the last freeze (a frozen garbage cycle is never
freed: see :mod:`drover.gc_policy`). The
youngest generation's threshold is raised to at least
``CacheConfig.gc_young_threshold`` when the cache starts (never lowered; 0
leaves it). Threshold and freezes are :class:`drover.gc_policy.GcPolicy`,
the policy the brokers use too. Why, with the measurements:
``bench/results/state-cache-gc.md``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from drover.coord.errors import EtcdUnavailable
from drover.coord.kv import (
    KV,
    Compacted,
    KVStore,
    Op,
    Put,
    RangePage,
    WatchBatch,
    WatchEvent,
    prefix_end,
)
from drover.errors import Unavailable
from drover.gc_policy import GcPolicy, GcPolicyConfig
from drover.state.blocking import IndexWaiters
from drover.state.config import CacheConfig
from drover.state.contact import ContactStore
from drover.state.core import codec
from drover.state.core.tables import Tables, marker_key
from drover.state.core.windows import RangeWindows
from drover.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class Change(NamedTuple):
    """One applied change (a NamedTuple: one per watched event, so cheap to make)."""

    kind: str
    namespace: str
    id: str
    revision: int
    deleted: bool
    value: bytes
    create_revision: int


Listener = Callable[[int, list[Change]], None]
ResetListener = Callable[[int], None]


def marker_put(keys: codec.KeyCodec) -> Put:
    """The op every object-writing txn adds (see the module docstring)."""
    return Put(marker_key(keys), b"")


class Cache:
    def __init__(
        self,
        store: KVStore,
        keys: codec.KeyCodec,
        config: CacheConfig,
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
        self._drainer: asyncio.Task[None] | None = None
        self._prefix = keys.base.encode()
        self._marker = marker_key(keys)
        # The revision at which the current tables were listed: history at or
        # before it is not replayable from the cache.
        self.listed_at = 0
        self._listing = False  # (apply_committed waits for the new tables)
        #: This replica's committed txns by who applied them to the cache:
        #: ``writer`` (apply_committed), ``watch`` (its events came first)
        #: or ``waited`` (the cache was behind: the write waited for the watch).
        self.own_writes = {"writer": 0, "watch": 0, "waited": 0}
        self._gc = GcPolicy(GcPolicyConfig(young_threshold=self.config.gc_young_threshold,
                                           freeze_every=self.config.freeze_every_events,
                                           freeze_min_restore=self.config.freeze_min_objects))

    @property
    def revision(self) -> int:
        return self.tables.revision

    def last_contact(self) -> float:
        """Seconds since this replica last heard from etcd (any successful call)."""
        return self.store.age()

    async def start(self) -> None:
        """List, then watch in the background; returns once listed."""
        self._gc.start()
        await self._list()
        self._task = asyncio.create_task(self._run(), name="state-cache-watch")

    async def close(self) -> None:
        """Stop the watch and the drainer; bounded by ``config.stop_timeout``."""
        await cancel_and_wait((self._task, self._drainer), within=self.config.stop_timeout,
                              what="state cache close")

    async def _list(self) -> None:
        collecting = gc.isenabled()
        gc.disable()  # process-wide, but only until the list ends (see above)
        self._listing = True
        try:
            tables = await self._read_all()
            self._listing = False
            replaced = sum(len(t) for t in self.tables.tables.values())
            self._swap(tables, tables.revision)
            if replaced:
                # A re-list: the replaced tables (cycles through their tables'
                # bound methods) are garbage only a collection frees.
                gc.unfreeze()
                gc.collect()
            # Frozen if large (no collection first on a first list: nothing
            # to free), and *before* the collector is back on: every object
            # the list made is still in the youngest generation, so the first
            # allocation after gc.enable() would walk all of them (a young
            # collection over millions of objects: ~1 s at 1M).
            self._gc.restored(sum(len(t) for t in tables.tables.values()))
        finally:
            self._listing = False
            if collecting:
                gc.enable()

    async def _read_all(self) -> Tables:
        tables = Tables(self.keys)
        windows = RangeWindows(self._prefix, prefix_end(self._prefix),
                               limit=self.config.page_size)
        limit = self.config.page_size
        start, end = windows.next()
        page = await self.store.range(start, end, limit=limit)
        rev = page.revision  # every later page is pinned at the first one's revision
        while True:
            windows.observe([kv.key for kv in page.kvs], page.count, page.more)
            ahead: asyncio.Future[RangePage] | None = None
            if not windows.done:
                # The next page is read while this one decodes: etcd serves
                # it on another core instead of waiting for us (fast start).
                start, end = windows.next()
                ahead = asyncio.ensure_future(
                    self.store.range(start, end, limit=limit, revision=rev))
            try:
                kvs, step = page.kvs, self.config.stage_chunk
                for i in range(0, len(kvs), step):
                    # Yield between chunks: a request only goes out when its
                    # task runs (and grpc's own call task after it), so
                    # without these turns the read "ahead" would start only
                    # after the whole page was decoded -- no overlap at all.
                    await asyncio.sleep(0)
                    tables.stage(kvs[i:i + step])
            except BaseException:
                if ahead is not None:
                    ahead.cancel()
                raise
            if ahead is None:
                break
            page = await ahead
        tables.load_staged()
        tables.advance(rev)
        for table in tables.tables.values():
            table.index = max(table.index, rev) if table.index == 0 else table.index
        return tables

    def _swap(self, tables: Tables, rev: int) -> None:
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
                # What apply_committed applied is not even built by the
                # watch (_apply would skip it anyway).
                watch.skip_applied(lambda: self.tables.revision)
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
        # An event at or below the applied revision was applied by
        # apply_committed (the watch delivers every revision once, in order,
        # so nothing else is ever at or below it): skipped, not applied twice.
        top = self.tables.revision
        events = batch.events
        if events and events[0].kv.mod_revision <= top:
            events = [ev for ev in events if ev.kv.mod_revision > top]
        self._apply_events(events, batch.revision)

    def _apply_events(self, events: list[WatchEvent], revision: int) -> None:
        changes: list[Change] = []
        touched: set[str] = set()
        apply, new = self.tables.apply, tuple.__new__
        for kv, deleted in events:
            got = apply(kv.key, kv.value, kv.create_revision, kv.mod_revision, deleted)
            if got is None:
                continue
            ok, old = got
            touched.add(ok.kind)
            create = kv.create_revision if not deleted else (old[2][0] if old else 0)
            # (tuple.__new__: what Change's own __new__ does, minus a Python call)
            changes.append(new(Change, (ok.kind, ok.namespace, ok.id, kv.mod_revision, deleted,
                                        kv.value, create)))
        self.tables.advance(revision)
        self._gc.applied(len(events))
        if changes:
            for listener in self.listeners:
                listener(self.revision, changes)
        for kind in touched:
            self.table_waiters[kind].advance(self.tables[kind].index)
        self.applied.advance(self.revision)
        if self.tables.queued and (self._drainer is None or self._drainer.done()):
            self._drainer = asyncio.create_task(self._drain(), name="state-cache-drain")

    def apply_committed(self, revision: int, ops: Sequence[Op]) -> bool:
        """Read-your-write without the watch round trip: apply ``ops``, the
        whole of a txn that etcd committed as ``revision``, if the cache has
        applied exactly ``revision - 1``; False (nothing done) otherwise.

        Exact: the watch claims a revision only once it delivered every event
        up to it (:class:`~drover.coord.kv.WatchBatch`), so a cache at
        ``revision - 1`` holds every key of the prefix as it was just before
        the txn, and the txn's ops *are* the events of ``revision``: a put
        keeps the cached create revision of a key that exists and takes
        ``revision`` for a new one, a delete of an absent key is no event.
        Listeners get the same Changes in the same order as from the watch,
        whose events for ``revision`` are then skipped as already applied
        (:meth:`_apply`). Refused while a list runs (its tables replace these)
        and for a txn that put a key twice (etcd refuses those anyway)."""
        if self._listing or self.tables.revision != revision - 1:
            self.own_writes["watch" if self.tables.revision >= revision else "waited"] += 1
            return False
        keys = [op.key for op in ops]
        if len(set(keys)) != len(keys):
            self.own_writes["waited"] += 1
            return False
        events: list[WatchEvent] = []
        new = tuple.__new__  # a NamedTuple's own __new__ minus a Python call (2 per op)
        existing = self.tables.existing
        for op in ops:
            old = existing(op.key)
            if isinstance(op, Put):
                create = revision if old is None else old
                events.append(new(WatchEvent, (new(KV, (op.key, op.value, create, revision)),
                                               False)))
            elif old is not None:
                events.append(new(WatchEvent, (new(KV, (op.key, b"", 0, revision)), True)))
        self._apply_events(events, revision)
        self.own_writes["writer"] += 1
        return True

    async def _drain(self) -> None:
        """Finish deletes' secondary-index removals in small chunks, one per
        loop turn, instead of inside the watch apply that a write waits for:
        they interleave with other work and fill idle turns (a delete call
        awaiting its etcd txn, the gap before a client's next call). Reads
        never see the queue (they flush or skip it), so this only moves work
        off the critical path: the apply of a 127-evaluation delete page
        dropped from ~2.7 to ~1.3 ms at 100k cached evaluations. A chunk is
        cut from each index in one sorted pass, so chunks hold a whole watch
        batch or more (``drain_chunk``): a delete page's removals are mostly
        adjacent in create order."""
        while True:
            if not self.tables.flush(self.config.drain_chunk):
                return
            await asyncio.sleep(0)  # yield to whatever else is ready

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
        """Catch up to the last object write in etcd (a consistent read);
        EtcdUnavailable when etcd does not answer within ``marker_timeout``."""
        try:
            async with asyncio.timeout(self.config.marker_timeout):
                page = await self.store.range(self._marker, b"")
        except TimeoutError:
            raise EtcdUnavailable(
                f"etcd did not answer this state replica within {self.config.marker_timeout}s; "
                "retry on another replica, or read with stale=true") from None
        self._touch()
        target = page.kvs[0].mod_revision if page.kvs else 0
        await self.wait_for_revision(target)
        return target

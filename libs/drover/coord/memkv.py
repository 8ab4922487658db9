"""An in-memory etcd: the twin of :class:`drover.coord.etcd_kv.EtcdKV`.

Same semantics as etcd's v3 KV where drover depends on them (the contract
suite in ``tests/contract`` runs the same tests against both):

* one revision for the whole store, raised by one per transaction that
  changes something (a txn whose compares fail, or whose deletes find
  nothing, leaves it alone); every op of a txn shares that revision;
* ``create_revision``/``mod_revision``/``version`` per key; a compare on an
  absent key compares against zeros, as etcd's does;
* ranges at the current or a past revision; a past revision older than the
  last compaction raises :class:`Compacted`, as does compacting it again;
* watches from a revision: every change in revision order, one batch per
  revision, none lost or repeated; a watch from a compacted revision raises
  :class:`Compacted` on its first read. A watch is fed synchronously at
  each write (like etcd's synced watchers), so compaction never cancels a
  watch that has already caught up;
* leases with a TTL on the clock passed in: keys put with a lease are
  deleted, in one revision, when it is revoked or expires. Expiry is
  checked at every operation and by :meth:`MemoryKV.expire_leases` (call
  it after advancing a virtual clock so watchers see the deletes). A
  keepalive stream answers each send at once with the TTL (0 once the
  lease is gone), as etcd's does;
* ``progress_notify`` on a watch is accepted and ignored (etcd sends those
  every 10 minutes by default; :meth:`request_progress` answers at once).

Pure apart from the watch queues: no I/O, no timers, the clock passed in.
Not thread-safe (one event loop, like everything in drover).
"""

from __future__ import annotations

import asyncio
import bisect
import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from drover.coord.clock import Clock, monotonic
from drover.coord.errors import EtcdUnavailable
from drover.coord.kv import (
    KV,
    MAX_TXN_OPS,
    Compacted,
    Compare,
    Delete,
    LeaseNotFound,
    Op,
    Put,
    RangePage,
    RangeSummary,
    TxnResult,
    WatchBatch,
    WatchEvent,
)


@dataclass(slots=True)
class _Version:
    """One step of a key's history: a put (``kv``) or a delete (``None``)."""

    revision: int
    kv: KV | None
    version: int = 0
    lease: int = 0


@dataclass(slots=True)
class _Lease:
    ttl: int
    expires: float
    keys: set[bytes] = field(default_factory=set)


def _in_range(k: bytes, key: bytes, range_end: bytes) -> bool:
    if range_end == b"":
        return k == key
    if range_end == b"\0":
        return k >= key
    return key <= k < range_end


class _MemWatch:
    """One watch: a queue fed at each write, read in revision order."""

    def __init__(self, kv: MemoryKV, key: bytes, range_end: bytes) -> None:
        self._kv = kv
        self.key, self.range_end = key, range_end
        self._queue: asyncio.Queue[WatchBatch | BaseException | None] = asyncio.Queue()
        self._closed = False
        self._applied: Callable[[], int] | None = None

    def skip_applied(self, applied: Callable[[], int]) -> None:
        self._applied = applied

    def offer(self, revision: int, events: list[WatchEvent]) -> None:
        mine = [e for e in events if _in_range(e.kv.key, self.key, self.range_end)]
        if mine:
            self._queue.put_nowait(WatchBatch(mine, revision))

    def fail(self, err: BaseException) -> None:
        self._queue.put_nowait(err)

    def request_progress(self) -> None:
        # Every change up to the current revision is already queued ahead.
        if not self._closed:
            self._queue.put_nowait(WatchBatch([], self._kv.current_revision))

    def suspect(self) -> None:
        return None  # nothing to probe: memory does not freeze

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._kv._watches.discard(self)
            self._queue.put_nowait(None)

    async def __aiter__(self) -> AsyncIterator[WatchBatch]:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                await self.close()
                raise item
            if item.events and self._applied is not None:
                top = self._applied()  # what etcd's watch leaves out too
                kept = [e for e in item.events if e.kv.mod_revision > top]
                if len(kept) != len(item.events):
                    item = WatchBatch(kept, item.revision)
            yield item


class _MemKeepAlives:
    """A keepalive stream: every send is answered at once, in order."""

    def __init__(self, kv: MemoryKV, lease: int) -> None:
        self._kv, self._lease = kv, lease
        self._replies: asyncio.Queue[int | None] = asyncio.Queue()
        self._closed = False

    async def send(self) -> None:
        if self._closed:
            raise EtcdUnavailable("keepalive stream is closed")
        self._replies.put_nowait(self._kv._renew(self._lease))

    async def __aiter__(self) -> AsyncIterator[int]:
        while True:
            ttl = await self._replies.get()
            if ttl is None:
                return
            yield ttl

    def suspect(self) -> None:
        return None

    def cancel(self) -> None:
        if not self._closed:
            self._closed = True
            self._replies.put_nowait(None)


class MemoryKV:
    """:class:`drover.coord.kv.LeaseKV` in memory (see the module docstring)."""

    def __init__(self, clock: Clock = monotonic, *, max_txn_ops: int = MAX_TXN_OPS) -> None:
        self._clock = clock
        self._max_txn_ops = max_txn_ops
        self._rev = 1  # etcd's revision on an empty store
        self._compacted = 0
        self._keys: list[bytes] = []  # sorted: every key that still has history
        self._hist: dict[bytes, list[_Version]] = {}
        self._log: list[tuple[int, list[WatchEvent]]] = []  # changes since compaction
        self._watches: set[_MemWatch] = set()
        self._leases: dict[int, _Lease] = {}
        self._next_lease = 0x694D0000

    @property
    def current_revision(self) -> int:
        return self._rev

    # ---- reads

    def _at(self, key: bytes, revision: int) -> _Version | None:
        hist = self._hist.get(key)
        if not hist:
            return None
        i = bisect.bisect_right([v.revision for v in hist], revision)
        return hist[i - 1] if i else None

    def _live(self, key: bytes) -> _Version | None:
        hist = self._hist.get(key)
        return hist[-1] if hist and hist[-1].kv is not None else None

    def _keys_in(self, key: bytes, range_end: bytes) -> list[bytes]:
        lo = bisect.bisect_left(self._keys, key)
        if range_end == b"":
            return [key] if lo < len(self._keys) and self._keys[lo] == key else []
        hi = len(self._keys) if range_end == b"\0" else bisect.bisect_left(self._keys, range_end)
        return self._keys[lo:hi]

    async def range(
        self, key: bytes, range_end: bytes, *, limit: int = 0, revision: int = 0,
        count_only: bool = False,
    ) -> RangePage:
        self.expire_leases()
        if revision and revision < self._compacted:
            raise Compacted()
        if revision > self._rev:
            raise EtcdUnavailable(
                "etcd: OUT_OF_RANGE: mvcc: required revision is a future revision")
        at = revision or self._rev
        kvs = []
        for k in self._keys_in(key, range_end):
            v = self._at(k, at)
            if v is not None and v.kv is not None:
                kvs.append(v.kv)
        count = len(kvs)
        if count_only:
            return RangePage([], False, self._rev, count)
        more = bool(limit) and count > limit
        return RangePage(kvs[:limit] if limit else kvs, more, self._rev, count)

    async def newest(self, key: bytes, range_end: bytes) -> KV | None:
        self.expire_leases()
        live = [v.kv for k in self._keys_in(key, range_end)
                if (v := self._live(k)) is not None and v.kv is not None]
        if not live:
            return None
        kv = max(live, key=lambda x: x.mod_revision)
        return kv._replace(value=b"")

    async def summary(self, key: bytes, range_end: bytes) -> RangeSummary:
        self.expire_leases()
        live = [v.kv for k in self._keys_in(key, range_end)
                if (v := self._live(k)) is not None and v.kv is not None]
        return RangeSummary(self._rev, len(live), max((kv.mod_revision for kv in live),
                                                      default=0))

    async def revision(self) -> int:
        self.expire_leases()
        return self._rev

    # ---- writes

    def _compare(self, c: Compare) -> bool:
        v = self._live(c.key)
        if v is None or v.kv is None:
            actual = 0
        elif c.target == "mod":
            actual = v.kv.mod_revision
        elif c.target == "create":
            actual = v.kv.create_revision
        elif c.target == "version":
            actual = v.version
        elif c.target == "lease":
            actual = v.lease
        else:
            raise ValueError(f"unknown compare target {c.target!r}")
        return actual == c.value

    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult:
        self.expire_leases()
        # etcd's --max-txn-ops caps the compares and the ops each
        n = max(len(ops), len(compares))
        if n > self._max_txn_ops:
            raise ValueError(f"a txn holds at most {self._max_txn_ops} operations "
                             f"(etcd's --max-txn-ops), not {n}")
        for op in ops:
            if isinstance(op, Put) and op.lease and op.lease not in self._leases:
                raise LeaseNotFound(op.lease)
        if not all(self._compare(c) for c in compares):
            return TxnResult(False, self._rev)
        self._apply(ops)
        return TxnResult(True, self._rev)

    def _apply(self, ops: Sequence[Op]) -> None:
        rev = self._rev + 1
        events: list[WatchEvent] = []
        for op in ops:
            prev = self._live(op.key)
            if isinstance(op, Put):
                create = prev.kv.create_revision if prev is not None and prev.kv else rev
                kv = KV(op.key, op.value, create, rev)
                self._record(op.key, _Version(rev, kv, (prev.version if prev else 0) + 1,
                                              op.lease), prev)
                events.append(WatchEvent(kv, False))
            elif isinstance(op, Delete) and prev is not None:
                self._record(op.key, _Version(rev, None), prev)
                events.append(WatchEvent(KV(op.key, b"", 0, rev), True))
        if not events:
            return
        self._rev = rev
        self._log.append((rev, events))
        for w in list(self._watches):
            w.offer(rev, events)

    def _record(self, key: bytes, v: _Version, prev: _Version | None) -> None:
        if prev is not None and prev.lease and prev.lease in self._leases:
            self._leases[prev.lease].keys.discard(key)
        if v.lease:
            self._leases[v.lease].keys.add(key)
        hist = self._hist.get(key)
        if hist is None:
            hist = self._hist[key] = []
            bisect.insort(self._keys, key)
        hist.append(v)

    async def compact(self, revision: int) -> None:
        self.expire_leases()
        if revision <= self._compacted:
            raise Compacted()
        if revision > self._rev:
            raise EtcdUnavailable(
                "etcd: OUT_OF_RANGE: mvcc: required revision is a future revision")
        self._compacted = revision
        for key in list(self._keys):
            hist = self._hist[key]
            i = bisect.bisect_right([v.revision for v in hist], revision)
            # keep what a read at ``revision`` sees (if it is a live value)
            keep_from = i - 1 if i and hist[i - 1].kv is not None else i
            del hist[:max(keep_from, 0)]
            if not hist:
                del self._hist[key]
                self._keys.remove(key)
        self._log = [(r, ev) for r, ev in self._log if r >= revision]

    # ---- watches

    async def watch(self, key: bytes, range_end: bytes, start_revision: int, *,
                    progress_notify: bool = False) -> _MemWatch:
        self.expire_leases()
        w = _MemWatch(self, key, range_end)
        if start_revision and start_revision < self._compacted:
            w.fail(Compacted(self._compacted))  # etcd too: created, then canceled
            return w
        start = start_revision or self._rev + 1
        for rev, events in self._log:
            if rev >= start:
                w.offer(rev, events)
        self._watches.add(w)
        return w

    # ---- leases

    async def lease_grant(self, ttl: int) -> int:
        self.expire_leases()
        self._next_lease += 1
        self._leases[self._next_lease] = _Lease(ttl, self._clock() + ttl)
        return self._next_lease

    #: A keepalive is answered at once: never suspect.
    suspect_after = math.inf

    async def lease_keepalive(self, lease: int) -> int:
        ttl = self._renew(lease)
        if ttl <= 0:
            raise LeaseNotFound(lease)
        return ttl

    def _renew(self, lease: int) -> int:
        """Renew ``lease``: its TTL, or 0 if it is gone (etcd's answer)."""
        self.expire_leases()
        held = self._leases.get(lease)
        if held is None:
            return 0
        held.expires = self._clock() + held.ttl
        return held.ttl

    def keepalives(self, lease: int) -> _MemKeepAlives:
        return _MemKeepAlives(self, lease)

    async def lease_revoke(self, lease: int) -> None:
        self.expire_leases()
        if lease not in self._leases:
            raise LeaseNotFound(lease)
        self._revoke(lease)

    def _revoke(self, lease: int) -> None:
        held = self._leases.pop(lease)
        self._apply([Delete(k) for k in sorted(held.keys)])

    def expire_leases(self) -> list[int]:
        """Revoke every lease whose TTL has run out on the clock; their ids."""
        now = self._clock()
        gone = [lid for lid, held in self._leases.items() if held.expires <= now]
        for lid in gone:
            self._revoke(lid)
        return gone

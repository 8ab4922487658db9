"""The write side of an indexed collection: objects, create order, indexes.

:class:`IndexedStore` keeps the objects of one kind and maintains their
indexes under writes: a bulk load, then incremental upserts and removals.
:class:`drover.paging.IndexedCollection` adds the reads the paginator scans
(index selection, candidates, counts); this module is what those reads may
rely on.

Objects are kept once, in a dict keyed by the ``id`` of their :class:`Key`
(unique in the collection, so a cache finds an object without knowing its
create index); the create-order index and every secondary index hold only
keys, so an index costs about one pointer per object. The item type is the
caller's: a cache that must stay small stores compact records (serialized
bytes plus a tuple of scalar fields), never full objects. ``fields`` maps
field names to extractors; ``indexed`` names those kept in secondary
indexes (field value -> the keys having it, in key order).

A bulk load (:meth:`IndexedStore.load`, :meth:`IndexedStore.load_bulk`)
replaces everything: the items are put in key order once
(:meth:`drover.paging.bulk.BulkLoad.take`) and the create order and every
bucket are cut from lists already in order (no compare, no n inserts).

With ``defer_discards=True`` a removal updates the id map at once but only
*queues* the object for removal from the create-order and secondary
indexes; :meth:`IndexedStore.flush` applies the queue (in bounded chunks,
each cut from every list in one sorted pass by
:func:`drover.paging.sorted_lists.discard_sorted`, so an async owner can run
it while it waits on I/O). Secondary-index upkeep is most of a removal's
cost (one sorted-list delete per indexed field), and a delete-heavy owner --
the state cache applying a million-evaluation cleanup -- gains by doing it
while etcd works on the next transaction. A key re-inserted while its
removal is queued settles the queue first (else the late discard would drop
it); an ordered read (``__iter__``) settles it too.

A *sparse* indexed field (``sparse=``) does not index its empty value
``""``: for fields empty on nearly every object (an evaluation's
``deployment_id`` and ``node_id``) that bucket would hold almost every key,
cost one sorted-list update per write and never narrow a query.

A dense indexed field whose every object has one value is *uniform* (see
:class:`drover.paging.index.SecondaryIndex`): no bucket is kept, the create
order is that value's bucket, and a write costs the index nothing -- the
namespace of a single-namespace cluster, a field every object leaves at its
default: an index that holds one value never narrows a query. The first
object of another value turns it into buckets by one copy of the create
order; it turns uniform again only when the collection empties (nothing
queued) or is re-loaded. Buckets themselves start as plain sorted lists
and turn into a ``SortedList`` past ``SMALL_BUCKET`` keys: a selective index
(job_id) makes one per new value.

With ``id_index=True`` the ids are also kept sorted
(:class:`drover.paging.ids.IdIndex`, removals kept lazy) for id-prefix reads.

Not thread-safe; do not mutate while a scan iterator is being consumed.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from typing import Generic, TypedDict, TypeVar

from drover.paging.bulk import BulkLoad
from drover.paging.ids import IdIndex
from drover.paging.index import MIXED, Key, OrderedIndex, SecondaryIndex

__all__ = ["IndexedStore", "StoreOptions"]

T = TypeVar("T")

Getter = Callable[[T], Hashable]

#: A value no extractor returns: the "not indexed" value of a dense index.
_NOTHING = object()


class StoreOptions(TypedDict, total=False):
    """:class:`IndexedStore`'s keyword options, for a subclass to pass on."""

    id_index: bool
    defer_discards: bool
    sparse: Iterable[str]


class IndexedStore(Generic[T]):
    """Objects by id, in create order, with secondary indexes on some fields.

    ``key_of`` gives an object's key; its ``id`` part must be unique in the
    collection (use ``f"{namespace}/{id}"`` for kinds whose ids repeat across
    namespaces) and an object keeps its key for life. ``fields`` are the
    extractors the paginator may use for scoping, prefixes and index
    selection; ``indexed`` names those kept in indexes.
    """

    def __init__(
        self,
        key_of: Callable[[T], Key],
        fields: Mapping[str, Callable[[T], Hashable]],
        indexed: Iterable[str] = (),
        *,
        id_index: bool = False,
        defer_discards: bool = False,
        sparse: Iterable[str] = (),
    ) -> None:
        self._key_of = key_of
        self._fields = dict(fields)
        unknown = [name for name in indexed if name not in self._fields]
        if unknown:
            raise ValueError(f"indexed fields without an extractor: {unknown}")
        self._items: dict[str, T] = {}
        self._order = OrderedIndex()
        self._sparse = frozenset(sparse)
        indexed = list(indexed)
        if not self._sparse <= set(indexed):
            raise ValueError(f"sparse fields not indexed: {sorted(self._sparse - set(indexed))}")
        # A dense index may be uniform (see SecondaryIndex): its universe is
        # the create order. A sparse one is not (its "" is not indexed).
        self._indexes: dict[str, SecondaryIndex] = {
            name: SecondaryIndex(None if name in self._sparse else self._order)
            for name in indexed}
        # (extractor, index, the value not indexed) triples, resolved once:
        # writes walk them per object. _NOTHING: every value is indexed.
        self._maintained = [(self._fields[name], index, "" if name in self._sparse else _NOTHING)
                            for name, index in self._indexes.items()]
        self._ids: IdIndex | None = IdIndex() if id_index else None
        self._defer = defer_discards
        # Removed objects still in the secondary indexes (defer_discards),
        # and their keys: a key re-inserted before its removal is applied
        # must settle the queue first, or the late discard would drop it.
        self._queued: collections.deque[T] = collections.deque()
        self._queued_keys: set[Key] = set()

    # -- writes ---------------------------------------------------------------

    def load(self, items: Iterable[T]) -> None:
        """Replace everything (an initial range read): one sort, not n inserts.

        The items are sorted into key order once; the create-order index and
        every bucket are then cut from lists already in order (no compare),
        and each bucket is filled by C-level iteration (see
        :meth:`SecondaryIndex.load_sorted`). Keys must be distinct."""
        bulk = self.bulk()
        bulk.add(list(items))
        self.load_bulk(bulk)

    def bulk(self) -> BulkLoad[T]:
        """An empty :class:`BulkLoad` for this collection's items."""
        return BulkLoad(self._key_of)

    def load_bulk(self, bulk: BulkLoad[T]) -> None:
        """Replace everything by what ``bulk`` gathered: as :meth:`load` of
        its items in the order added, the per-item work already done."""
        if bulk.duplicate:
            raise ValueError("load: two items share an id")
        self._queued.clear()
        self._queued_keys.clear()
        self._items, ordered, keys, ids = bulk.take()
        if self._ids is not None:
            self._ids.load_sorted(ids)
        self._order = OrderedIndex.of_sorted(keys)
        for get, index, skip in self._maintained:
            if index.universe is not None:
                index.universe = self._order
            index.load_sorted(list(map(get, ordered)), keys, skip)

    def upsert(self, item: T) -> T | None:
        """Insert or replace by id; returns the previous object, if any."""
        key = self._key_of(item)
        old = self._items.get(key.id)
        if old is not None and self._key_of(old) != key:
            self.remove(self._key_of(old))
            old = None  # a new object under a reused id: a new position
        if old is None and key in self._queued_keys:
            self.flush()
        # Empty, nothing queued: every index is empty, and may turn uniform.
        fresh = not self._items and not self._queued
        self._items[key.id] = item
        if old is None:
            self._order.add(key)
            if self._ids is not None:
                self._ids.add(key.id)
        for get, index, skip in self._maintained:
            value = get(item)
            if old is not None:
                previous = get(old)
                if previous == value:
                    continue
                if index.uniform is not MIXED:
                    index.materialize()  # (this key leaves the bucket below)
                if previous != skip:
                    index.discard(previous, key)
            elif index.uniform is not MIXED:
                if value == index.uniform:
                    continue
                index.materialize(key)
            elif fresh and index.universe is not None:
                index.uniform = value
                continue
            if value != skip:
                index.add(value, key)
        return old

    def remove(self, key: Key) -> T | None:
        return self.remove_id(key.id)

    def remove_id(self, id_: str) -> T | None:
        old = self._items.pop(id_, None)
        if old is None:
            return None
        key = self._key_of(old)
        if self._ids is not None:
            # Deferred: flush() cuts them in sorted batches. Else compact at
            # half stale (an O(n) pass: ~0.3 s at 1M, so not for the cache).
            self._ids.remove(id_, None if self._defer else self._items)
        if self._defer:
            self._queued.append(old)
            self._queued_keys.add(key)
            return old
        self._order.discard(key)
        for get, index, skip in self._maintained:
            if index.uniform is not MIXED:
                continue  # (the key left the universe: its bucket)
            value = get(old)
            if value != skip:
                index.discard(value, key)
        return old

    @property
    def queued(self) -> int:
        """Removed objects not yet taken out of the secondary indexes."""
        return len(self._queued)

    def flush(self, limit: int | None = None) -> int:
        """Apply up to ``limit`` queued removals (all if None); how many remain."""
        queued, key_of = self._queued, self._key_of
        n = len(queued) if limit is None else min(limit, len(queued))
        if not n:
            return len(queued)
        batch = [queued.popleft() for _ in range(n)]
        batch.sort(key=key_of)  # key order: every group cut below is then in order
        keys = list(map(key_of, batch))
        self._queued_keys.difference_update(keys)
        if self._ids is not None:
            self._ids.cut_gone(key.id for key in keys)
        # One sorted batch per list (the order, each bucket touched), cut
        # in one pass each, not one bisect-and-delete per key and index.
        self._order.discard_many(keys)
        for get, index, skip in self._maintained:
            if index.uniform is not MIXED:
                continue  # every queued key had the value: gone with the order
            index.discard_batch(list(map(get, batch)), keys, skip)
        return len(queued)

    # -- reads ----------------------------------------------------------------

    def get(self, key: Key) -> T | None:
        return self._items.get(key.id)

    def by_id(self, id_: str) -> T | None:
        return self._items.get(id_)

    @property
    def items(self) -> Mapping[str, T]:
        """Objects by id (read-only by convention: write through upsert/remove)."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, Key) and key.id in self._items

    def __iter__(self) -> Iterator[T]:
        """Objects in ascending create order."""
        self._settle()
        items = self._items
        return (items[key.id] for key in self._order)

    def _settle(self) -> None:
        if self._queued:
            self.flush()

    @property
    def fields(self) -> Collection[str]:
        return self._fields.keys()

    @property
    def indexed(self) -> Collection[str]:
        return self._indexes.keys()

    def getter(self, field: str) -> Getter[T]:
        return self._fields[field]

    def value(self, item: T, field: str) -> Hashable:
        return self._fields[field](item)

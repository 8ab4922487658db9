"""An in-memory collection with a create-order index and secondary indexes.

This is the store a watch-fed cache keeps per object kind, and what the
paginator scans (it implements :class:`drover.paging.paginator.Source`).
Objects are kept once, in a dict keyed by the ``id`` of their :class:`Key`
(unique in the collection, so a cache finds an object without knowing its
create index); the create-order index and every secondary index hold only
keys, so an index costs about one pointer per object. The item type is the
caller's: a cache that must stay small stores compact records (serialized
bytes plus a tuple of scalar fields), never full objects.

Secondary indexes answer "objects whose ``field`` is one of these values" in
key order. ``fields`` maps field names to extractors; the extractors must
return the very values a filter compares against (for protobuf objects use
``drover.filter.Schema.getter`` so that an enum reads ``"pending"`` both in
the index and in CEL). Given equality constraints, :meth:`candidates` walks
the smallest matching bucket (a union of buckets for ``field in [...]``) and
:meth:`count` answers from bucket sizes alone when a single indexed field is
constrained; an intersection iterates the smallest bucket and checks the
other fields with their extractors.

With ``id_index=True`` the ids are also kept sorted
(:class:`drover.paging.ids.IdIndex`, removals kept lazy), so an id ``prefix``
selects its objects by two bisections; when that set is the smallest, its
keys are sorted into create order (at most ``prefix_sort_limit`` of them per
call, which bounds the work) and walked instead of a bucket. ``id_prefixes``
maps a request's prefix to id prefixes (a cache whose ids are
``"<namespace>/<id>"`` yields one per namespace).

With ``defer_discards=True`` a removal updates the id map at once but only
*queues* the object for removal from the create-order and secondary
indexes; :meth:`flush` applies the queue (in bounded chunks, each cut from
every list in one sorted pass by
:func:`drover.paging.sorted_lists.discard_sorted`, so an async owner can run
it while it waits on I/O). Secondary-index upkeep
is most of a removal's cost (one sorted-list delete per indexed field), and
a delete-heavy owner -- the state cache applying a million-evaluation
cleanup -- gains by doing it while etcd works on the next transaction.
Results never see the queue: every exact read (counts, ``keys``,
``members``, ``index_values``, ``plan``) flushes first, and
:meth:`candidates` skips a queued key because its id no longer maps to an
object with that key (bucket sizes may then over-estimate, which only
affects which index a walk picks).

A *sparse* indexed field (``sparse=``) does not index its empty value
``""``: for fields empty on nearly every object (an evaluation's
``deployment_id`` and ``node_id``) that bucket would hold almost every key,
cost one sorted-list update per write and never narrow a query. A query for
``""`` on a sparse field walks create order and tests the field instead.

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

A bulk load (:meth:`load`, :meth:`load_bulk`) replaces everything: the items
are put in key order once (:meth:`drover.paging.bulk.BulkLoad.take`) and the
create order and every bucket are cut from lists already in order.

Not thread-safe; do not mutate while a scan iterator is being consumed.
"""

from __future__ import annotations

import bisect
import collections
import itertools
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from drover.paging.bulk import BulkLoad
from drover.paging.ids import IdIndex
from drover.paging.index import MIXED, Key, OrderedIndex, SecondaryIndex

__all__ = ["IndexedCollection", "Where"]

T = TypeVar("T")

# Equality constraints: field -> the values it may take (a conjunction).
Where = Mapping[str, frozenset[Hashable]]
Getter = Callable[[T], Hashable]
IdPrefixes = Callable[[str, Where], Iterable[str]]

PREFIX_SORT_LIMIT = 20_000


def _same_prefix(prefix: str, where: Where) -> Iterable[str]:
    return (prefix,)


#: A value no extractor returns: the "not indexed" value of a dense index.
_NOTHING = object()


class IndexedCollection(Generic[T]):
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
        id_prefixes: IdPrefixes = _same_prefix,
        prefix_sort_limit: int = PREFIX_SORT_LIMIT,
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
        self._id_prefixes = id_prefixes
        self._prefix_sort_limit = prefix_sort_limit
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

    def keys(self, field: str | None = None, value: Hashable = None, *,
             after: Key | None = None, descending: bool = False) -> Iterator[Key]:  # fmt: skip
        """Keys strictly after ``after`` in create order: all of them, or those
        whose indexed ``field`` is ``value``."""
        self._settle()
        if field is None:
            return self._order.iter_from(after, descending=descending)
        if field in self._sparse and value == "":
            get, items = self._fields[field], self._items
            return (key for key in self._order.iter_from(after, descending=descending)
                    if get(items[key.id]) == "")
        return self._indexes[field].iter_from((value,), after, descending=descending)

    def index_values(self, field: str) -> Iterator[Hashable]:
        """The distinct values an indexed field currently takes."""
        self._settle()
        index = self._indexes[field]
        if field in self._sparse and len(self._items) > index.total():
            return itertools.chain(index.values(), ("",))
        return index.values()

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

    def plan(self, where: Where) -> str | None:
        """The indexed field whose buckets are smallest for ``where`` (None: create order)."""
        self._settle()
        return self._plan(where)[0]

    def _plan(self, where: Where) -> tuple[str | None, int]:
        best: str | None = None
        best_size = len(self._items)
        for name, values in where.items():
            index = self._indexes.get(name)
            if index is None or (name in self._sparse and "" in values):
                continue  # (a sparse index does not hold "")
            size = index.count(values)
            if best is None or size < best_size:
                best, best_size = name, size
        return best, best_size

    def _prefix_ranges(self, prefix: str, where: Where) -> list[tuple[int, int]] | None:
        if self._ids is None or not prefix:
            return None
        return self._ids.ranges(self._id_prefixes(prefix, where))

    def candidates(
        self,
        where: Where,
        *,
        after: Key | None = None,
        descending: bool = False,
        prefix: str = "",
    ) -> Iterator[tuple[Key, T]]:
        """A superset of the objects satisfying ``where`` and ``prefix``, after ``after``.

        In key order. Only the chosen index narrows; the caller checks every
        constraint (so it can count each candidate against a scan budget).
        """
        name, size = self._plan(where)
        items = self._items
        ranges = self._prefix_ranges(prefix, where)
        if ranges is not None:
            matched = sum(hi - lo for lo, hi in ranges)
            if matched <= min(size, self._prefix_sort_limit):
                return self._prefix_walk(ranges, after, descending)
        if name is None:
            keys = self._order.iter_from(after, descending=descending)
        else:
            keys = self._indexes[name].iter_from(where[name], after, descending=descending)
        if self._queued:
            return self._live(keys)
        return ((key, items[key.id]) for key in keys)

    def _live(self, keys: Iterator[Key]) -> Iterator[tuple[Key, T]]:
        # A queued (removed) key's id is gone or names a newer object.
        items, key_of = self._items, self._key_of
        for key in keys:
            item = items.get(key.id)
            if item is not None and key_of(item) == key:
                yield key, item

    def _prefix_walk(
        self, ranges: list[tuple[int, int]], after: Key | None, descending: bool
    ) -> Iterator[tuple[Key, T]]:
        assert self._ids is not None
        items, key_of, ids = self._items, self._key_of, self._ids
        keyed = sorted(
            ((key_of(items[i]), items[i]) for lo, hi in ranges for i in ids.islice(lo, hi)
             if i in items),  # a removed id may linger in the list
            key=lambda pair: pair[0],
            reverse=descending,
        )
        if after is not None:
            keys = [k for k, _ in keyed]
            if descending:
                start = len(keys) - bisect.bisect_left(keys[::-1], after)
            else:
                start = bisect.bisect_right(keys, after)
            keyed = keyed[start:]
        return iter(keyed)

    def members(self, where: Where) -> Iterable[T]:
        """A superset of the objects satisfying ``where``, in no particular order."""
        name = self.plan(where)  # (settles the queue)
        if name is None:
            return self._items.values()
        items = self._items
        return (items[key.id] for key in self._indexes[name].iter_from(where[name]))

    def count(self, where: Where) -> int | None:
        """Objects satisfying ``where`` exactly, or None if a field is not indexed."""
        if any(name not in self._indexes or (name in self._sparse and "" in values)
               for name, values in where.items()):
            return None
        name = self.plan(where)  # (settles the queue)
        if name is None:
            return len(self._items)
        if len(where) == 1:
            return self._indexes[name].count(where[name])
        checks = [(self._fields[f], values) for f, values in where.items() if f != name]
        items = self._items
        total = 0
        for key in self._indexes[name].iter_from(where[name]):
            item = items[key.id]
            if all(get(item) in values for get, values in checks):
                total += 1
        return total

"""Ordered key sets: the create-order index and per-field secondary indexes.

Every listed object has a :class:`Key` ``(create_index, id)``: the etcd create
revision, then an id unique within the collection to break ties between keys
created in one transaction. A key never changes while the object exists, so
"strictly after key K in key order" is a cursor that stays valid while other
objects are written: later creations sort after every existing key, deletions
just vanish, and nothing present throughout is seen twice or skipped.

:class:`OrderedIndex` is a sorted set of keys (``sortedcontainers.SortedList``:
O(log n) insert, delete and seek, lazy iteration from any cursor, about 8
bytes per key besides the shared key tuple; the fast paths on its sublists are
:mod:`drover.paging.sorted_lists`). :class:`SecondaryIndex` maps a
field value to the ordered keys of the objects having it; iterating several
values merges their buckets in key order. Pure data structures: no I/O, not
thread-safe, and a collection must not be changed while an iterator over it
is being consumed (the async shell scans within one synchronous call).
"""

from __future__ import annotations

import bisect
import collections
import heapq
from collections.abc import Hashable, Iterable, Iterator
from typing import Any, NamedTuple

from sortedcontainers import SortedList

from drover.paging.sorted_lists import REBUILD_SHARE, add_new, discard_sorted, sorted_list_of

__all__ = ["MIXED", "Key", "OrderedIndex", "SecondaryIndex"]


class Key(NamedTuple):
    create_index: int
    id: str


#: Keys per list up to which a batch removal discards them one by one.
SMALL_BATCH = 2


#: Keys up to which a bucket is a plain sorted list, not a ``SortedList``.
SMALL_BUCKET = 256


class OrderedIndex:
    """A sorted set of keys with O(log n) seek to a cursor.

    Small (a selective index's bucket: one job's evaluations) it is a plain
    sorted ``list``: a ``SortedList`` costs ~1 us and ~400 bytes to make,
    and a selective index makes one per new value (a job_id per new job).
    Past ``SMALL_BUCKET`` keys it becomes a ``SortedList`` for good."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Iterable[Key] | None = None) -> None:
        self._keys: SortedList | list[Key] = [] if keys is None else SortedList(keys)

    @classmethod
    def of_sorted(cls, keys: list[Key]) -> OrderedIndex:
        """The index of ``keys``, already sorted ascending and distinct."""
        index = cls()
        index._keys = keys[:] if len(keys) <= SMALL_BUCKET else sorted_list_of(keys)
        return index

    def add(self, key: Key) -> None:
        keys = self._keys
        if not isinstance(keys, list):
            add_new(keys, key)
            return
        i = bisect.bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            keys.insert(i, key)
            if len(keys) > SMALL_BUCKET:
                self._keys = sorted_list_of(keys)

    def discard(self, key: Key) -> None:
        keys = self._keys
        if not isinstance(keys, list):
            keys.discard(key)
            return
        i = bisect.bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            del keys[i]

    def discard_many(self, keys: list[Key]) -> None:
        """Remove ``keys`` (sorted ascending) in one pass."""
        mine = self._keys
        if not isinstance(mine, list):
            discard_sorted(mine, keys)
        elif len(keys) * REBUILD_SHARE < len(mine):
            # A key or two from a job's bucket (a delete page spans many
            # jobs): a search each, not a pass over the whole bucket.
            for key in keys:
                i = bisect.bisect_left(mine, key)
                if i < len(mine) and mine[i] == key:
                    del mine[i]
        else:
            gone = set(keys)
            mine[:] = [k for k in mine if k not in gone]

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        keys = self._keys
        if not isinstance(keys, list):
            return key in keys
        i = bisect.bisect_left(keys, key)
        return i < len(keys) and keys[i] == key

    def __iter__(self) -> Iterator[Key]:
        return iter(self._keys)

    def iter_from(self, after: Key | None = None, *, descending: bool = False) -> Iterator[Key]:
        """Keys strictly after ``after`` in the walk's direction (all if None)."""
        keys = self._keys
        if isinstance(keys, list):
            if after is None:
                return reversed(keys) if descending else iter(keys)
            if descending:
                return reversed(keys[:bisect.bisect_left(keys, after)])
            return iter(keys[bisect.bisect_right(keys, after):])
        if after is None:
            return reversed(keys) if descending else iter(keys)
        if descending:
            return keys.irange(maximum=after, inclusive=(True, False), reverse=True)
        return keys.irange(minimum=after, inclusive=(False, True))


#: :attr:`SecondaryIndex.uniform` of an index whose every value has a bucket.
MIXED: Any = object()


class SecondaryIndex:
    """Field value -> :class:`OrderedIndex` of the keys having that value.

    *Uniform*: an index given its owner's ``universe`` (the create-order
    index of every key) keeps no bucket while every key has one value,
    :attr:`uniform`: the universe is that value's bucket. Such an index
    never narrows a query (the walk is the create order either way), so it
    costs nothing to write -- a single-namespace cluster's namespace, or a
    field every object leaves at its default. The owner keeps the mode
    (:class:`drover.paging.IndexedCollection`): it sets :attr:`uniform` when
    its first key arrives, calls :meth:`materialize` before a key takes
    another value, and calls :meth:`add`/:meth:`discard`, which maintain
    buckets, only while :attr:`uniform` is :data:`MIXED`. The reads
    (:meth:`size`, :meth:`count`, :meth:`values`, :meth:`iter_from`...)
    answer in either mode."""

    __slots__ = ("_buckets", "uniform", "universe")

    def __init__(self, universe: OrderedIndex | None = None) -> None:
        self._buckets: dict[Hashable, OrderedIndex] = {}
        #: The one value of every key of ``universe`` (no bucket kept), or MIXED.
        self.uniform: Any = MIXED
        #: The owner's every key (None: never uniform).
        self.universe = universe

    def materialize(self, moving: Key | None = None) -> None:
        """Leave uniform mode: the uniform value's bucket is every key of
        the universe but ``moving`` (a new key of another value, already in
        the universe). One C-level copy of the universe (~10 ms at 1M), once
        per change of mode."""
        value, self.uniform = self.uniform, MIXED
        assert value is not MIXED and self.universe is not None
        keys = list(self.universe)
        if moving is not None:
            i = bisect.bisect_left(keys, moving)
            if i < len(keys) and keys[i] == moving:
                del keys[i]
        self._buckets = {value: OrderedIndex.of_sorted(keys)} if keys else {}

    # add/discard run once per index per cached write (a few times for an
    # evaluation), so they reach the bucket's keys directly rather than
    # through OrderedIndex's methods: a write-heavy backlog spends most of
    # its cache time here. Both only while MIXED (the owner's part).

    def add(self, value: Hashable, key: Key) -> None:
        bucket = self._buckets.get(value)
        if bucket is None:
            bucket = self._buckets[value] = OrderedIndex()
            bucket._keys.append(key)  # (a new bucket is a list)
            return
        keys = bucket._keys
        if isinstance(keys, list):
            bucket.add(key)
        else:
            add_new(keys, key)

    def discard(self, value: Hashable, key: Key) -> None:
        bucket = self._buckets.get(value)
        if bucket is None:
            return
        bucket.discard(key)
        if not bucket._keys:
            del self._buckets[value]

    def discard_many(self, value: Hashable, keys: list[Key]) -> None:
        """Remove ``keys`` (sorted ascending) from ``value``'s bucket in one pass."""
        bucket = self._buckets.get(value)
        if bucket is None:
            return
        sl = bucket._keys
        if isinstance(sl, list):
            bucket.discard_many(keys)
        elif len(keys) <= SMALL_BATCH:
            # A selective index (job_id: a few keys per bucket per batch)
            # touches many buckets with a key or two each: a plain discard
            # beats the batch cut's set-up (measured ~2x per key).
            for key in keys:
                sl.discard(key)
        else:
            discard_sorted(sl, keys)
        if not sl:
            del self._buckets[value]

    def discard_batch(self, values: list[Hashable], keys: list[Key], skip: Any = None) -> None:
        """Remove ``keys`` (sorted ascending), ``values[i]`` the value of
        ``keys[i]``; ``skip`` is a value not indexed. One sorted batch per
        bucket touched, cut in one pass each; values grouped by C-level
        iteration (a field with one value in the batch -- namespace, type --
        is one group: no grouping at all)."""
        first = values[0]
        if first != skip and values.count(first) == len(values):
            self.discard_many(first, keys)
            return
        groups: dict[Hashable, list[Key]] = {value: [] for value in set(values)}
        collections.deque(map(list.append, map(groups.__getitem__, values), keys), maxlen=0)
        groups.pop(skip, None)
        for value, group in groups.items():
            self.discard_many(value, group)

    def load(self, pairs: Iterable[tuple[Hashable, Key]]) -> None:
        """Replace the contents in one go (sorting once beats n inserts)."""
        grouped: dict[Hashable, list[Key]] = {}
        for value, key in pairs:
            grouped.setdefault(value, []).append(key)
        self.uniform = MIXED
        self._buckets = {value: OrderedIndex(keys) for value, keys in grouped.items()}

    def load_sorted(self, values: list[Hashable], keys: list[Key], skip: Any = None) -> None:
        """Replace the contents: ``keys`` sorted ascending and distinct,
        ``values[i]`` the field value of ``keys[i]``; ``skip`` is a value not
        indexed (pass an object no value equals to index all). Buckets are
        filled in key order by C-level iteration (one ``list.append`` per
        key, dispatched through ``map``), so none is sorted. A field with one
        value on every key (one namespace, one type; a sparse field empty
        everywhere) is one bucket of ``keys``, or none: no grouping pass;
        with a universe (then ``keys`` must be its keys) it is kept uniform
        instead: no bucket at all."""
        self.uniform = MIXED
        first = values[0] if values else skip
        if values.count(first) == len(values):
            self._buckets = {}
            if first == skip:
                return
            if self.universe is not None:
                self.uniform = first
            else:
                self._buckets[first] = OrderedIndex.of_sorted(keys)
            return
        grouped: dict[Hashable, list[Key]] = {value: [] for value in set(values)}
        collections.deque(map(list.append, map(grouped.__getitem__, values), keys), maxlen=0)
        grouped.pop(skip, None)
        self._buckets = {value: OrderedIndex.of_sorted(group) for value, group in grouped.items()}

    def size(self, value: Hashable) -> int:
        if self.uniform is not MIXED:
            return len(self.universe or ()) if value == self.uniform else 0
        bucket = self._buckets.get(value)
        return 0 if bucket is None else len(bucket)

    def count(self, values: Iterable[Hashable]) -> int:
        # Bucket sizes add up because an object has exactly one value per field.
        return sum(self.size(v) for v in set(values))

    def values(self) -> Iterator[Hashable]:
        if self.uniform is not MIXED:
            return iter((self.uniform,) if self.universe else ())
        return iter(self._buckets)

    def total(self) -> int:
        """Keys in all buckets."""
        if self.uniform is not MIXED:
            return len(self.universe or ())
        return sum(len(b) for b in self._buckets.values())

    def __len__(self) -> int:
        """Distinct values."""
        if self.uniform is not MIXED:
            return 1 if self.universe else 0
        return len(self._buckets)

    def iter_from(
        self, values: Iterable[Hashable], after: Key | None = None, *, descending: bool = False
    ) -> Iterator[Key]:
        """Keys of objects whose value is one of ``values``, in key order."""
        if self.uniform is not MIXED:
            if self.universe is None or self.uniform not in set(values):
                return iter(())
            return self.universe.iter_from(after, descending=descending)
        buckets = [b for b in (self._buckets.get(v) for v in set(values)) if b is not None]
        if not buckets:
            return iter(())
        if len(buckets) == 1:
            return buckets[0].iter_from(after, descending=descending)
        return heapq.merge(
            *(b.iter_from(after, descending=descending) for b in buckets), reverse=descending
        )

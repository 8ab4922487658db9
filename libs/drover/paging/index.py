"""Ordered key sets: the create-order index and per-field secondary indexes.

Every listed object has a :class:`Key` ``(create_index, id)``: the etcd create
revision, then an id unique within the collection to break ties between keys
created in one transaction. A key never changes while the object exists, so
"strictly after key K in key order" is a cursor that stays valid while other
objects are written: later creations sort after every existing key, deletions
just vanish, and nothing present throughout is seen twice or skipped.

:class:`OrderedIndex` is a sorted set of keys (``sortedcontainers.SortedList``:
O(log n) insert, delete and seek, lazy iteration from any cursor, about 8
bytes per key besides the shared key tuple). :class:`SecondaryIndex` maps a
field value to the ordered keys of the objects having it; iterating several
values merges their buckets in key order. Pure data structures: no I/O, not
thread-safe, and a collection must not be changed while an iterator over it
is being consumed (the async shell scans within one synchronous call).
"""

from __future__ import annotations

import bisect
import collections
import heapq
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from sortedcontainers import SortedList

__all__ = ["Key", "OrderedIndex", "SecondaryIndex", "discard_sorted", "sorted_list_of"]


class Key(NamedTuple):
    create_index: int
    id: str


#: Keys per list up to which a batch removal discards them one by one.
SMALL_BATCH = 2
#: A batch removing at least 1/REBUILD_SHARE of a list rebuilds it instead.
REBUILD_SHARE = 8


def discard_sorted(sl: SortedList, keys: Sequence[Any]) -> None:
    """Remove ``keys`` (sorted ascending; absent ones are ignored) from
    ``sl`` in one pass: each sublist the keys fall in is cut once (keys a
    batch removes are often adjacent -- a delete walks create order), instead
    of one bisect-and-delete per key. Works on ``SortedList``'s sublists
    (``_lists``, ``_maxes``, ``_len``, ``_index``: sortedcontainers 2.x,
    pinned); a property test holds it equal to per-key ``discard``."""
    if not keys:
        return
    if len(keys) * REBUILD_SHARE >= len(sl):
        gone = set(keys)
        kept = [k for k in sl if k not in gone]
        if len(kept) != len(sl):
            sl.clear()
            sl.update(kept)  # sorted input: a linear sort
        return
    lists, maxes = sl._lists, sl._maxes
    touched: list[int] = []
    removed = 0
    i, n = 0, len(keys)
    pos = bisect.bisect_left(maxes, keys[0])
    while i < n and pos < len(lists):
        sub = lists[pos]
        j = bisect.bisect_right(keys, maxes[pos], i)  # keys[i:j] can only be here
        if j > i:
            lo = bisect.bisect_left(sub, keys[i])
            hi = bisect.bisect_right(sub, keys[j - 1])
            if hi > lo:
                gone = set(keys[i:j])
                kept = [k for k in sub[lo:hi] if k not in gone]
                if len(kept) != hi - lo:
                    removed += hi - lo - len(kept)
                    sub[lo:hi] = kept
                    touched.append(pos)
        i = j
        if i < n:
            pos = bisect.bisect_left(maxes, keys[i], pos + 1)
    if not removed:
        return
    sl._len -= removed
    del sl._index[:]
    # Restore SortedList's balance as its own _delete does: a sublist under
    # half the load joins its neighbour (and is split again if too long).
    half = sl._load >> 1
    for pos in reversed(touched):  # later positions first: merges shift them
        if len(lists[pos]) > half or len(lists) == 1:
            if lists[pos]:
                maxes[pos] = lists[pos][-1]
            else:
                del lists[pos]
                del maxes[pos]
            continue
        if not pos:
            pos = 1
        prev = pos - 1
        lists[prev].extend(lists[pos])
        del lists[pos]
        del maxes[pos]
        if lists[prev]:
            maxes[prev] = lists[prev][-1]
            sl._expand(prev)
        else:
            del lists[prev]
            del maxes[prev]


def sorted_list_of(values: list[Any]) -> SortedList:
    """A ``SortedList`` of ``values``, which must be sorted ascending already
    (a bulk load sorted them once): cut into sublists directly, as
    ``SortedList.update`` does after its own sort, with no compare at all.
    Uses the sublists (sortedcontainers 2.x, pinned; see
    :func:`discard_sorted`); a unit test holds it equal to ``SortedList``."""
    sl = SortedList()
    load = sl._load
    sl._lists.extend(values[pos:pos + load] for pos in range(0, len(values), load))
    sl._maxes.extend(sub[-1] for sub in sl._lists)
    sl._len = len(values)
    return sl


class OrderedIndex:
    """A sorted set of keys with O(log n) seek to a cursor."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Iterable[Key] | None = None) -> None:
        # None, not (): SortedList skips its update() (a sort and a
        # generator even for nothing), ~4x the cost of a new bucket, and a
        # selective index (job_id) makes a bucket per write.
        self._keys: SortedList = SortedList(keys)

    @classmethod
    def of_sorted(cls, keys: list[Key]) -> OrderedIndex:
        """The index of ``keys``, already sorted ascending and distinct."""
        index = cls()
        index._keys = sorted_list_of(keys)
        return index

    def add(self, key: Key) -> None:
        if key not in self._keys:
            self._keys.add(key)

    def discard(self, key: Key) -> None:
        self._keys.discard(key)

    def discard_many(self, keys: list[Key]) -> None:
        """Remove ``keys`` (sorted ascending) in one pass."""
        discard_sorted(self._keys, keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[Key]:
        return iter(self._keys)

    def iter_from(self, after: Key | None = None, *, descending: bool = False) -> Iterator[Key]:
        """Keys strictly after ``after`` in the walk's direction (all if None)."""
        if after is None:
            return reversed(self._keys) if descending else iter(self._keys)
        if descending:
            return self._keys.irange(maximum=after, inclusive=(True, False), reverse=True)
        return self._keys.irange(minimum=after, inclusive=(False, True))


class SecondaryIndex:
    """Field value -> :class:`OrderedIndex` of the keys having that value."""

    __slots__ = ("_buckets",)

    def __init__(self) -> None:
        self._buckets: dict[Hashable, OrderedIndex] = {}

    # add/discard run once per index per cached write (nine times for an
    # evaluation), so they reach the bucket's SortedList directly rather
    # than through OrderedIndex's methods: a delete-heavy backlog spends most
    # of its cache time here.

    def add(self, value: Hashable, key: Key) -> None:
        bucket = self._buckets.get(value)
        if bucket is None:
            bucket = self._buckets[value] = OrderedIndex()
        keys = bucket._keys
        if key not in keys:
            keys.add(key)

    def discard(self, value: Hashable, key: Key) -> None:
        bucket = self._buckets.get(value)
        if bucket is None:
            return
        keys = bucket._keys
        keys.discard(key)
        if not keys:
            del self._buckets[value]

    def discard_many(self, value: Hashable, keys: list[Key]) -> None:
        """Remove ``keys`` (sorted ascending) from ``value``'s bucket in one pass."""
        bucket = self._buckets.get(value)
        if bucket is None:
            return
        sl = bucket._keys
        if len(keys) <= SMALL_BATCH:
            # A selective index (job_id: a few keys per bucket per batch)
            # touches many buckets with a key or two each: a plain discard
            # beats the batch cut's set-up (measured ~2x per key).
            for key in keys:
                sl.discard(key)
        else:
            discard_sorted(sl, keys)
        if not sl:
            del self._buckets[value]

    def load(self, pairs: Iterable[tuple[Hashable, Key]]) -> None:
        """Replace the contents in one go (sorting once beats n inserts)."""
        grouped: dict[Hashable, list[Key]] = {}
        for value, key in pairs:
            grouped.setdefault(value, []).append(key)
        self._buckets = {value: OrderedIndex(keys) for value, keys in grouped.items()}

    def load_sorted(self, values: list[Hashable], keys: list[Key], skip: Any = None) -> None:
        """Replace the contents: ``keys`` sorted ascending and distinct,
        ``values[i]`` the field value of ``keys[i]``; ``skip`` is a value not
        indexed (pass an object no value equals to index all). Buckets are
        filled in key order by C-level iteration (one ``list.append`` per
        key, dispatched through ``map``), so none is sorted. A field with one
        value on every key (one namespace, one type; a sparse field empty
        everywhere) is one bucket of ``keys``, or none: no grouping pass."""
        first = values[0] if values else skip
        if values.count(first) == len(values):
            self._buckets = {} if first == skip else {first: OrderedIndex.of_sorted(keys)}
            return
        grouped: dict[Hashable, list[Key]] = {value: [] for value in set(values)}
        collections.deque(map(list.append, map(grouped.__getitem__, values), keys), maxlen=0)
        grouped.pop(skip, None)
        self._buckets = {value: OrderedIndex.of_sorted(group) for value, group in grouped.items()}

    def size(self, value: Hashable) -> int:
        bucket = self._buckets.get(value)
        return 0 if bucket is None else len(bucket)

    def count(self, values: Iterable[Hashable]) -> int:
        # Bucket sizes add up because an object has exactly one value per field.
        return sum(self.size(v) for v in set(values))

    def values(self) -> Iterator[Hashable]:
        return iter(self._buckets)

    def total(self) -> int:
        """Keys in all buckets."""
        return sum(len(b) for b in self._buckets.values())

    def __len__(self) -> int:
        return len(self._buckets)

    def iter_from(
        self, values: Iterable[Hashable], after: Key | None = None, *, descending: bool = False
    ) -> Iterator[Key]:
        """Keys of objects whose value is one of ``values``, in key order."""
        buckets = [b for b in (self._buckets.get(v) for v in set(values)) if b is not None]
        if not buckets:
            return iter(())
        if len(buckets) == 1:
            return buckets[0].iter_from(after, descending=descending)
        return heapq.merge(
            *(b.iter_from(after, descending=descending) for b in buckets), reverse=descending
        )

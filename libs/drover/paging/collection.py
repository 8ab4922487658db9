"""The read side of an indexed collection: what the paginator scans.

:class:`IndexedCollection` is the store a watch-fed cache keeps per object
kind (its writes and index upkeep are :class:`drover.paging.store.IndexedStore`'s)
and what the paginator scans (it implements
:class:`drover.paging.paginator.Source`).

Secondary indexes answer "objects whose ``field`` is one of these values" in
key order. ``fields`` maps field names to extractors; the extractors must
return the very values a filter compares against (for protobuf objects use
``drover.filter.Schema.getter`` so that an enum reads ``"pending"`` both in
the index and in CEL). Given equality constraints, :meth:`candidates` walks
the smallest matching bucket (a union of buckets for ``field in [...]``) and
:meth:`count` answers from bucket sizes alone when a single indexed field is
constrained; an intersection iterates the smallest bucket and checks the
other fields with their extractors. A query for ``""`` on a sparse field
(not indexed: see the store) walks create order and tests the field instead.

With ``id_index=True`` the ids are also kept sorted
(:class:`drover.paging.ids.IdIndex`), so an id ``prefix`` selects its
objects by two bisections; when that set is the smallest, its keys are
sorted into create order (at most ``prefix_sort_limit`` of them per call,
which bounds the work) and walked instead of a bucket. ``id_prefixes`` maps
a request's prefix to id prefixes (a cache whose ids are
``"<namespace>/<id>"`` yields one per namespace).

Results never see the deferred-removal queue (``defer_discards``): every
exact read (counts, ``keys``, ``members``, ``index_values``, ``plan``)
flushes first, and :meth:`candidates` skips a queued key because its id no
longer maps to an object with that key (bucket sizes may then over-estimate,
which only affects which index a walk picks).

Not thread-safe; do not mutate while a scan iterator is being consumed.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import TypeVar, Unpack

from drover.paging.index import Key
from drover.paging.store import IndexedStore, StoreOptions

__all__ = ["IndexedCollection", "Where"]

T = TypeVar("T")

# Equality constraints: field -> the values it may take (a conjunction).
Where = Mapping[str, frozenset[Hashable]]
IdPrefixes = Callable[[str, Where], Iterable[str]]

PREFIX_SORT_LIMIT = 20_000


def _same_prefix(prefix: str, where: Where) -> Iterable[str]:
    return (prefix,)


class IndexedCollection(IndexedStore[T]):
    """An :class:`IndexedStore` answering the paginator's queries.

    ``id_prefixes`` and ``prefix_sort_limit`` tune id-prefix reads (see the
    module docstring); the other arguments are the store's.
    """

    def __init__(
        self, key_of: Callable[[T], Key], fields: Mapping[str, Callable[[T], Hashable]],
        indexed: Iterable[str] = (), *, id_prefixes: IdPrefixes = _same_prefix,
        prefix_sort_limit: int = PREFIX_SORT_LIMIT, **options: Unpack[StoreOptions],
    ) -> None:
        super().__init__(key_of, fields, indexed, **options)
        self._id_prefixes = id_prefixes
        self._prefix_sort_limit = prefix_sort_limit

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

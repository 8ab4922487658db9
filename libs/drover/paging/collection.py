"""An in-memory collection with a create-order index and secondary indexes.

This is the store a watch-fed cache keeps per object kind, and what the
paginator scans (it implements :class:`drover.paging.paginator.Source`).
Objects are kept once, in a dict keyed by :class:`Key`; the create-order
index and every secondary index hold only keys, so an index costs about one
pointer per object.

Secondary indexes answer "objects whose ``field`` is one of these values" in
key order. ``fields`` maps field names to extractors; the extractors must
return the very values a filter compares against (for protobuf objects use
``drover.filter.Schema.getter`` so that an enum reads ``"pending"`` both in
the index and in CEL). Given equality constraints, :meth:`candidates` walks
the smallest matching bucket (a union of buckets for ``field in [...]``) and
:meth:`count` answers from bucket sizes alone when a single indexed field is
constrained; an intersection iterates the smallest bucket and checks the
other fields with their extractors. Nothing here is a full scan unless no
constrained field is indexed.

Not thread-safe; do not mutate while a scan iterator is being consumed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from drover.paging.index import Key, OrderedIndex, SecondaryIndex

__all__ = ["IndexedCollection", "Where"]

T = TypeVar("T")

# Equality constraints: field -> the values it may take (a conjunction).
Where = Mapping[str, frozenset[Hashable]]


class IndexedCollection(Generic[T]):
    """Objects by key, in create order, with secondary indexes on some fields.

    ``key_of`` gives an object's key; its ``id`` part must be unique in the
    collection (use ``f"{namespace}/{id}"`` for kinds whose ids repeat across
    namespaces). ``fields`` are the extractors the paginator may use for
    scoping and index selection; ``indexed`` names those kept in indexes.
    """

    def __init__(
        self,
        key_of: Callable[[T], Key],
        fields: Mapping[str, Callable[[T], Hashable]],
        indexed: Iterable[str] = (),
    ) -> None:
        self._key_of = key_of
        self._fields = dict(fields)
        unknown = [name for name in indexed if name not in self._fields]
        if unknown:
            raise ValueError(f"indexed fields without an extractor: {unknown}")
        self._items: dict[Key, T] = {}
        self._order = OrderedIndex()
        self._indexes: dict[str, SecondaryIndex] = {name: SecondaryIndex() for name in indexed}

    # -- writes ---------------------------------------------------------------

    def load(self, items: Iterable[T]) -> None:
        """Replace everything (an initial range read): one sort, not n inserts."""
        self._items = {self._key_of(item): item for item in items}
        self._order = OrderedIndex(self._items)
        for name, index in self._indexes.items():
            get = self._fields[name]
            index.load((get(item), key) for key, item in self._items.items())

    def upsert(self, item: T) -> T | None:
        """Insert or replace by key; returns the previous object, if any."""
        key = self._key_of(item)
        old = self._items.get(key)
        self._items[key] = item
        if old is None:
            self._order.add(key)
        for name, index in self._indexes.items():
            get = self._fields[name]
            value = get(item)
            if old is not None:
                previous = get(old)
                if previous == value:
                    continue
                index.discard(previous, key)
            index.add(value, key)
        return old

    def remove(self, key: Key) -> T | None:
        old = self._items.pop(key, None)
        if old is None:
            return None
        self._order.discard(key)
        for name, index in self._indexes.items():
            index.discard(self._fields[name](old), key)
        return old

    # -- reads ----------------------------------------------------------------

    def get(self, key: Key) -> T | None:
        return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        """Objects in ascending create order."""
        items = self._items
        return (items[key] for key in self._order)

    @property
    def fields(self) -> Collection[str]:
        return self._fields.keys()

    @property
    def indexed(self) -> Collection[str]:
        return self._indexes.keys()

    def value(self, item: T, field: str) -> Hashable:
        return self._fields[field](item)

    def plan(self, where: Where) -> str | None:
        """The indexed field whose buckets are smallest for ``where`` (None: create order)."""
        best: str | None = None
        best_size = len(self._items)
        for name, values in where.items():
            index = self._indexes.get(name)
            if index is None:
                continue
            size = index.count(values)
            if best is None or size < best_size:
                best, best_size = name, size
        return best

    def candidates(
        self, where: Where, *, after: Key | None = None, descending: bool = False
    ) -> Iterator[tuple[Key, T]]:
        """A superset of the objects satisfying ``where``, strictly after ``after``.

        In key order. Only the chosen index narrows; the caller checks every
        constraint (so it can count each candidate against a scan budget).
        """
        name = self.plan(where)
        if name is None:
            keys = self._order.iter_from(after, descending=descending)
        else:
            keys = self._indexes[name].iter_from(where[name], after, descending=descending)
        items = self._items
        return ((key, items[key]) for key in keys)

    def count(self, where: Where) -> int | None:
        """Objects satisfying ``where`` exactly, or None if a field is not indexed."""
        if any(name not in self._indexes for name in where):
            return None
        name = self.plan(where)
        if name is None:
            return len(self._items)
        if len(where) == 1:
            return self._indexes[name].count(where[name])
        checks = [(self._fields[f], values) for f, values in where.items() if f != name]
        items = self._items
        total = 0
        for key in self._indexes[name].iter_from(where[name]):
            item = items[key]
            if all(get(item) in values for get, values in checks):
                total += 1
        return total

"""The sorted id index of a collection: id-prefix ranges, removal kept lazy.

With ``id_index=True`` an :class:`drover.paging.IndexedCollection` keeps its
ids sorted, so an id ``prefix`` selects its objects by two bisections
(:meth:`IdIndex.ranges`). Ids are random (UUIDs), so a sorted-list delete on
every removal would be a random-position delete; instead a removal only
notes the id in :attr:`IdIndex.gone`: the id stays in the sorted list until
it is cut in a sorted batch (:meth:`IdIndex.cut_gone`, the deferred-removal
flush) or, without deferral, until the stale ids are half the list and one
linear filter rebuilds it (:meth:`IdIndex.compact`: the list is sorted
already, so its re-sort is linear too).

Invariants: every live id is in the list; an id in the list but not live is
in :attr:`IdIndex.gone` (a walk over :meth:`IdIndex.islice` skips ids its
owner no longer maps, so prefix reads stay exact); an id re-added while
still listed only leaves ``gone`` (it is never listed twice). Pure: no I/O,
not thread-safe.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator

from sortedcontainers import SortedList

from drover.paging.sorted_lists import add_new, discard_sorted, sorted_list_of

__all__ = ["IdIndex"]


class IdIndex:
    """Sorted ids, removed ones lingering in :attr:`gone` until cut."""

    __slots__ = ("_ids", "gone")

    def __init__(self) -> None:
        self._ids = SortedList()
        #: Ids removed but still in the sorted list.
        self.gone: set[str] = set()

    def load_sorted(self, ids: list[str]) -> None:
        """Replace the contents by ``ids``, sorted ascending and distinct."""
        self._ids = sorted_list_of(ids)
        self.gone.clear()

    def add(self, id_: str) -> None:
        """Add a new id (one not live)."""
        if id_ in self.gone:
            self.gone.discard(id_)  # still in the list
        else:
            add_new(self._ids, id_)

    def remove(self, id_: str, live: Container[str] | None = None) -> None:
        """Note ``id_`` removed. With ``live`` (the ids still present) the
        list is compacted once half of it is stale (an O(n) pass: ~0.3 s at
        1M, so a deferring owner passes None and cuts in :meth:`cut_gone`)."""
        self.gone.add(id_)
        if live is not None and len(self.gone) * 2 > len(self._ids):
            self.compact(live)

    def compact(self, live: Container[str]) -> None:
        """Keep only the ``live`` ids: one linear pass (the list is sorted
        already, so the re-sort inside SortedList is linear too)."""
        self._ids = SortedList([i for i in self._ids if i in live])
        self.gone.clear()

    def cut_gone(self, ids: Iterable[str]) -> None:
        """Cut those of ``ids`` still removed from the list, in one sorted
        batch (one re-inserted since stays listed)."""
        gone = self.gone
        if not gone:
            return
        drop = sorted({id_ for id_ in ids if id_ in gone})
        gone.difference_update(drop)
        discard_sorted(self._ids, drop)

    def ranges(self, prefixes: Iterable[str]) -> list[tuple[int, int]]:
        """The non-empty position ranges of the listed ids starting with
        each of ``prefixes`` (removed ids included: see the module docstring)."""
        ids = self._ids
        ranges = []
        for p in prefixes:
            lo = ids.bisect_left(p)
            hi = ids.bisect_left(p[:-1] + chr(ord(p[-1]) + 1)) if p else len(ids)
            if hi > lo:
                ranges.append((lo, hi))
        return ranges

    def islice(self, lo: int, hi: int) -> Iterator[str]:
        return self._ids.islice(lo, hi)

    def __len__(self) -> int:
        """Listed ids, removed ones not yet cut included."""
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

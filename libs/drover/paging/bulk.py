"""Bulk loads gathered piece by piece (pure: no I/O).

The initial list of a watch-fed cache arrives in pages; the per-item part of
building a collection from them (keys, the id map) is done as each page
arrives -- while the next one is in flight -- so that
:meth:`drover.paging.IndexedCollection.load_bulk` is left the sorts and the
indexes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Generic, TypeVar

from drover.paging.index import Key

__all__ = ["BulkLoad"]

T = TypeVar("T")
_second = operator.itemgetter(1)


class BulkLoad(Generic[T]):
    """The items of one bulk load, gathered as they arrive (the pages of an
    initial list, while the next page is in flight): each :meth:`add` makes
    the items' keys and adds them to the id map, so
    :meth:`IndexedCollection.load_bulk` is left only the sorts and the
    indexes. Loading one bulk fed in several adds is exactly loading the
    concatenation (a property test holds it so)."""

    def __init__(self, key_of: Callable[[T], Key]) -> None:
        self._key_of = key_of
        self.items: list[T] = []
        self.keys: list[Key] = []
        self.ids: list[str] = []
        self.by_id: dict[str, T] = {}
        self.duplicate = False  # an id added twice (load_bulk refuses it)

    def add(self, items: list[T]) -> None:
        keys = list(map(self._key_of, items))
        ids = list(map(_second, keys))
        before = len(self.by_id)
        self.by_id.update(zip(ids, items, strict=True))
        if len(self.by_id) != before + len(items):
            self.duplicate = True
        self.items += items
        self.keys += keys
        self.ids += ids

    def __len__(self) -> int:
        return len(self.items)

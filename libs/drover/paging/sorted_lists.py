"""Fast paths on ``SortedList``'s sublists: build, add-if-absent, batch cut.

``sortedcontainers.SortedList`` keeps its items in sublists of at most
``2 * _load`` items (``_lists``), the last item of each in ``_maxes``, the
count in ``_len`` and a lazily built positional index in ``_index``. The
public API does one bisect per item; the functions here work on those
sublists directly so that the paging indexes pay one search (or none) where
the public API would pay two, or n:

* :func:`sorted_list_of` cuts an already-sorted list into sublists (a bulk
  load's create order and buckets: no compare at all);
* :func:`add_new` adds a key unless present with one search, and appends a
  creation (a key above every other) without any;
* :func:`discard_sorted` removes a sorted batch of keys cutting each sublist
  once (or rebuilding the list when the batch is a large share of it).

Invariants: each leaves a valid ``SortedList`` holding exactly the items
the public API would (``_maxes`` the sublists' last items, ``_len`` the
count, no empty sublist, none over twice the load, ``_index`` cleared or
kept valid by ``_expand``); tests hold each equal to its public-API
equivalent. They depend on sortedcontainers 2.x internals, which is pinned.
Pure: no I/O, not thread-safe.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from sortedcontainers import SortedList

__all__ = ["REBUILD_SHARE", "add_new", "discard_sorted", "sorted_list_of"]


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


def add_new(sl: SortedList, key: Any) -> bool:
    """Add ``key`` to ``sl`` unless present; True if added. A key above
    every other (a creation, in create order) is appended to the last
    sublist without a search; else one search finds both whether it is
    present and where it goes (``SortedList.add`` after ``in`` searches
    twice). Works on the sublists as :func:`discard_sorted` does (a
    property test holds it equal to ``if key not in sl: sl.add(key)``)."""
    maxes = sl._maxes
    if not maxes:
        sl._lists.append([key])
        maxes.append(key)
        sl._len = 1
        return True
    if key > maxes[-1]:
        pos = len(maxes) - 1
        sl._lists[pos].append(key)
        maxes[pos] = key
    else:
        pos = bisect.bisect_left(maxes, key)
        sub = sl._lists[pos]
        i = bisect.bisect_left(sub, key)
        if sub[i] == key:  # (i < len(sub): key <= maxes[pos], the sublist's last)
            return False
        sub.insert(i, key)
    sl._len += 1
    sl._expand(pos)  # splits a sublist grown too long, keeps the positional index
    return True

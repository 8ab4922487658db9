"""The create-index order over held evaluations, for the operator's ListQueue.

A flat list of ``(create_index, id)`` keys, appended as records arrive.
Evaluations normally arrive in create order (etcd revisions grow), so the
list stays sorted and appending is O(1); an out-of-order arrival only marks
it unsorted, and the next listing re-sorts (Timsort on an almost sorted list
is near linear). Removed records are left in place and skipped (lazy
deletion), and the list is rebuilt from the held records when stale keys
outnumber live ones. A bulk restore does not build it at all: the first
listing does, so restore stays one pass.

Iteration resumes strictly after a ``(create_index, id)`` cursor, ascending
or descending, which is all a paginator needs. Not safe against mutation
while an iterator is being consumed: take a page, then let the broker run.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping

from drover.broker.core.record import EvalRecord, QueueEntry

__all__ = ["QueueOrder"]

Cursor = tuple[int, str]

_REBUILD_SLACK = 1024


class QueueOrder:
    __slots__ = ("_keys", "_sorted", "_valid")

    def __init__(self) -> None:
        self._keys: list[Cursor] = []
        self._sorted = True
        self._valid = True

    def add(self, rec: EvalRecord) -> None:
        if not self._valid:
            return
        key = (rec.create_index, rec.id)
        if self._keys and key < self._keys[-1]:
            self._sorted = False
        self._keys.append(key)

    def invalidate(self) -> None:
        """Forget every key; the next listing rebuilds from the records."""
        self._keys = []
        self._valid = False
        self._sorted = True

    def iterate(
        self,
        records: Mapping[str, EvalRecord],
        after: Cursor | None = None,
        *,
        descending: bool = False,
    ) -> Iterator[QueueEntry]:
        keys = self._prepare(records)
        if descending:
            stop = len(keys) if after is None else bisect.bisect_left(keys, after)
            indexes = range(stop - 1, -1, -1)
        else:
            start = 0 if after is None else bisect.bisect_right(keys, after)
            indexes = range(start, len(keys))
        previous: Cursor | None = None
        for i in indexes:
            key = keys[i]
            # Duplicates appear when an evaluation left and came back.
            if key == previous:
                continue
            previous = key
            rec = records.get(key[1])
            if rec is None or rec.create_index != key[0] or rec.state is None:
                continue
            yield QueueEntry(key[0], key[1], rec.state, rec)

    def _prepare(self, records: Mapping[str, EvalRecord]) -> list[Cursor]:
        if not self._valid or len(self._keys) > 2 * len(records) + _REBUILD_SLACK:
            self._keys = sorted((rec.create_index, rec.id) for rec in records.values())
            self._valid = True
            self._sorted = True
        elif not self._sorted:
            self._keys.sort()
            self._sorted = True
        return self._keys

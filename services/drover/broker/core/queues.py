"""The broker's heaps: ready queues per scheduler type, and one timer heap.

Both use lazy deletion: an entry carries the record's ``ticket`` at push
time and is valid only while the record still has that ticket (every state
change draws a new one). Removing a record is therefore O(1); stale entries
are dropped when they surface, and a heap is rebuilt when stale entries
outnumber live ones, so memory stays proportional to what is held.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable, Sequence

from drover.broker.core.record import EvalRecord

__all__ = ["ReadyQueues", "TimerHeap"]

# (-priority, create_index, ticket, record): higher priority first, then
# older first. Tickets are unique, so the record is never compared.
ReadyEntry = tuple[int, int, int, EvalRecord]
# (deadline, ticket, record)
TimerEntry = tuple[float, int, EvalRecord]

_COMPACT_SLACK = 1024


class ReadyQueues:
    """One priority heap of READY records per scheduler type."""

    __slots__ = ("_heaps", "_live")

    def __init__(self) -> None:
        self._heaps: dict[str, list[ReadyEntry]] = {}
        self._live: dict[str, int] = {}

    def load(self, by_scheduler: dict[str, list[ReadyEntry]], live: dict[str, int]) -> None:
        """Replace everything with unordered entry lists (one heapify each).

        ``live`` counts the valid entries per scheduler (the lists may hold
        stale ones).
        """
        for entries in by_scheduler.values():
            heapq.heapify(entries)
        self._heaps = by_scheduler
        self._live = dict(live)

    def push(self, rec: EvalRecord) -> None:
        heap = self._heaps.get(rec.scheduler)
        if heap is None:
            heap = self._heaps[rec.scheduler] = []
        heapq.heappush(heap, (-rec.priority, rec.create_index, rec.ticket, rec))
        self._live[rec.scheduler] = self._live.get(rec.scheduler, 0) + 1

    def discard(self, rec: EvalRecord) -> None:
        """Account for a READY record leaving (its ticket is already changed)."""
        live = self._live[rec.scheduler] - 1
        self._live[rec.scheduler] = live
        heap = self._heaps[rec.scheduler]
        if len(heap) > 2 * live + _COMPACT_SLACK:
            fresh = [entry for entry in heap if entry[2] == entry[3].ticket]
            heapq.heapify(fresh)
            self._heaps[rec.scheduler] = fresh

    def count(self, scheduler: str) -> int:
        return self._live.get(scheduler, 0)

    def schedulers(self) -> frozenset[str]:
        """Scheduler types with at least one ready evaluation."""
        return frozenset(name for name, live in self._live.items() if live > 0)

    def _head(self, scheduler: str) -> EvalRecord | None:
        heap = self._heaps.get(scheduler)
        while heap:
            entry = heap[0]
            if entry[2] == entry[3].ticket:
                return entry[3]
            heapq.heappop(heap)
        return None

    def pop_best(self, schedulers: Sequence[str], rng: random.Random) -> EvalRecord | None:
        """Pop the best head among ``schedulers``.

        As in Nomad, heads of different types compare by priority only and
        equal priorities are broken at random: a flood of one scheduler type
        cannot starve another of the same priority.
        """
        if len(schedulers) == 1:
            # One type (the common worker): its head, no ties to break.
            heap = self._heaps.get(schedulers[0])
            while heap:
                entry = heapq.heappop(heap)
                if entry[2] == entry[3].ticket:
                    return entry[3]
            return None
        best: list[EvalRecord] = []
        for name in dict.fromkeys(schedulers):
            head = self._head(name)
            if head is None:
                continue
            if not best or head.priority > best[0].priority:
                best = [head]
            elif head.priority == best[0].priority:
                best.append(head)
        if not best:
            return None
        chosen = best[0] if len(best) == 1 else best[rng.randrange(len(best))]
        heapq.heappop(self._heaps[chosen.scheduler])
        return chosen


class TimerHeap:
    """Deadlines of records: nack timeouts, nack redelivery delays, wait_until."""

    __slots__ = ("_heap",)

    def __init__(self) -> None:
        self._heap: list[TimerEntry] = []

    def load(self, entries: Iterable[TimerEntry]) -> None:
        self._heap = list(entries)
        heapq.heapify(self._heap)

    def push(self, deadline: float, rec: EvalRecord) -> None:
        heapq.heappush(self._heap, (deadline, rec.ticket, rec))

    def next_deadline(self) -> float | None:
        heap = self._heap
        while heap:
            deadline, ticket, rec = heap[0]
            if ticket == rec.ticket:
                return deadline
            heapq.heappop(heap)
        return None

    def pop_due(self, now: float) -> EvalRecord | None:
        """Pop one valid record whose deadline is at or before ``now``."""
        heap = self._heap
        while heap:
            deadline, ticket, rec = heap[0]
            if ticket != rec.ticket:
                heapq.heappop(heap)
                continue
            if deadline > now:
                return None
            heapq.heappop(heap)
            return rec
        return None

    def compact(self, live: int) -> None:
        """Drop stale entries when they dominate (e.g. many OutstandingResets)."""
        if len(self._heap) > 2 * live + _COMPACT_SLACK:
            self.load(entry for entry in self._heap if entry[1] == entry[2].ticket)

    def __len__(self) -> int:
        return len(self._heap)

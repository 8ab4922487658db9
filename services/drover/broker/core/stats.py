"""Broker statistics: frozen snapshots and bounded latency reservoirs.

Counts are kept incrementally by the core (O(1) per transition) and copied
into a :class:`BrokerStats` on demand. Latencies go into a
:class:`Reservoir` (Vitter's algorithm R with the broker's injected random
source, so tests are deterministic): memory is bounded whatever the rate,
the sample stays uniform over everything observed, and the maximum is exact.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from drover.broker.core.record import EvalState

__all__ = ["BrokerStats", "Reservoir", "SchedulerStats", "TimingSummary", "snapshot"]


@dataclass(frozen=True, slots=True)
class TimingSummary:
    """A latency distribution, in seconds."""

    p50: float = 0.0
    p99: float = 0.0
    max: float = 0.0
    count: int = 0


@dataclass(frozen=True, slots=True)
class SchedulerStats:
    ready: int = 0
    unacked: int = 0


@dataclass(frozen=True, slots=True)
class BrokerStats:
    """A snapshot. ``total_cancelled`` and ``total_failed`` are cumulative
    since the broker was last enabled or restored; the others are current."""

    mode: str
    paused: bool
    total_ready: int
    total_unacked: int
    total_pending: int
    total_waiting: int
    total_blocked: int
    total_failed_held: int
    total_cancelled: int
    total_failed: int
    by_scheduler: Mapping[str, SchedulerStats] = field(default_factory=dict)
    ready_wait: TimingSummary = TimingSummary()
    processing: TimingSummary = TimingSummary()


_NEVER = 1 << 62


class Reservoir:
    """A bounded uniform sample of observations plus the exact count and max.

    Li's Algorithm L: once full, the index of the next observation to keep
    is drawn ahead (a geometric skip), so a full reservoir costs one
    comparison per observation, not a random draw (two per evaluation
    delivered); the sample is uniform all the same.
    """

    __slots__ = ("_capacity", "_max", "_next", "_rng", "_samples", "_w", "count")

    def __init__(self, capacity: int, rng: random.Random) -> None:
        self._capacity = capacity
        self._rng = rng
        self._samples: list[float] = []
        self._max = 0.0
        self.count = 0
        self._w = 1.0
        # The count at which the next observation replaces a sample.
        self._next = capacity

    def add(self, value: float) -> None:
        self.count += 1
        if value > self._max:
            self._max = value
        if self.count <= self._capacity:
            self._samples.append(value)
            if self.count == self._capacity:
                self._w = self._draw_w()
                self._next = self._skip()
            return
        if self.count < self._next:
            return
        self._samples[self._rng.randrange(self._capacity)] = value
        self._w *= self._draw_w()
        self._next = self._skip()

    def _draw_w(self) -> float:
        return math.exp(math.log(1.0 - self._rng.random()) / self._capacity)

    def _skip(self) -> int:
        """The count of the next observation kept (Algorithm L)."""
        w = self._w
        if w >= 1.0:  # (a degenerate draw: keep the very next one)
            return self.count + 1
        u = 1.0 - self._rng.random()  # in (0, 1]
        log_keep = math.log(1.0 - w)
        if log_keep == 0.0:  # w below float precision: nothing more is kept
            return self.count + _NEVER
        return self.count + int(math.log(u) / log_keep) + 1

    def summary(self) -> TimingSummary:
        if not self._samples:
            return TimingSummary()
        ordered = sorted(self._samples)
        return TimingSummary(
            p50=_quantile(ordered, 0.50),
            p99=_quantile(ordered, 0.99),
            max=self._max,
            count=self.count,
        )


def snapshot(
    mode: str,
    paused: bool,
    counts: Mapping[EvalState, int],
    ready_by: Mapping[str, int],
    unacked_by: Mapping[str, int],
    *,
    cancelled: int,
    failed: int,
    ready_wait: Reservoir,
    processing: Reservoir,
) -> BrokerStats:
    names = {name for name, n in ready_by.items() if n}
    names.update(name for name, n in unacked_by.items() if n)
    return BrokerStats(
        mode=mode,
        paused=paused,
        total_ready=counts[EvalState.READY],
        total_unacked=counts[EvalState.UNACKED],
        total_pending=counts[EvalState.PENDING],
        total_waiting=counts[EvalState.WAITING],
        total_blocked=counts[EvalState.BLOCKED],
        total_failed_held=counts[EvalState.FAILED],
        total_cancelled=cancelled,
        total_failed=failed,
        by_scheduler={
            name: SchedulerStats(ready_by.get(name, 0), unacked_by.get(name, 0))
            for name in sorted(names)
        },
        ready_wait=ready_wait.summary(),
        processing=processing.summary(),
    )


def _quantile(ordered: list[float], q: float) -> float:
    # Nearest rank: always an observed value, never an interpolation.
    rank = max(1, math.ceil(len(ordered) * q))
    return ordered[rank - 1]

"""The broker's domain metrics, read from the core's stats at scrape time.

Series (Prometheus names in parentheses):

* ``drover.broker.evaluations`` (``drover_broker_evaluations``): evaluations
  held, by ``state`` (ready, unacked, pending, waiting, blocked, failed).
* ``drover.broker.scheduler.evaluations``: ready and unacked evaluations by
  ``scheduler`` and ``state``.
* ``drover.broker.nacks`` / ``.failed`` / ``.cancelled`` (``..._total``):
  evaluations taken back from workers (Nack or nack timeout), sent to the
  failed queue at the delivery limit, cancelled; cumulative since this
  replica last became leader (a new term restarts them: a counter reset).
* ``drover.broker.enabled``: 1 while this replica's broker delivers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from drover.broker.core.stats import BrokerStats
from drover.telemetry.observed import observe

Series = Iterable[tuple[float, Mapping[str, Any]]]


class StatsSource(Protocol):
    @property
    def nacked_total(self) -> int: ...

    def stats(self) -> BrokerStats: ...


def by_state(s: BrokerStats) -> Series:
    return [
        (s.total_ready, {"state": "ready"}),
        (s.total_unacked, {"state": "unacked"}),
        (s.total_pending, {"state": "pending"}),
        (s.total_waiting, {"state": "waiting"}),
        (s.total_blocked, {"state": "blocked"}),
        (s.total_failed_held, {"state": "failed"}),
    ]


def by_scheduler(s: BrokerStats) -> Series:
    out: list[tuple[float, Mapping[str, Any]]] = []
    for name, st in s.by_scheduler.items():
        out.append((st.ready, {"scheduler": name, "state": "ready"}))
        out.append((st.unacked, {"scheduler": name, "state": "unacked"}))
    return out


def register(core: StatsSource) -> list[Callable[[], None]]:
    """Observe ``core``; returns the calls that unregister it."""
    return [
        observe("drover.broker.evaluations", lambda: by_state(core.stats()),
                unit="{evaluation}", description="evaluations the broker holds, by state"),
        observe("drover.broker.scheduler.evaluations", lambda: by_scheduler(core.stats()),
                unit="{evaluation}",
                description="ready and unacked evaluations by scheduler type"),
        observe("drover.broker.nacks", lambda: [(core.nacked_total, {})], kind="counter",
                unit="{evaluation}",
                description="evaluations taken back from workers (Nack or nack timeout)"),
        observe("drover.broker.failed", lambda: [(core.stats().total_failed, {})],
                kind="counter", unit="{evaluation}",
                description="evaluations sent to the failed queue at the delivery limit"),
        observe("drover.broker.cancelled", lambda: [(core.stats().total_cancelled, {})],
                kind="counter", unit="{evaluation}", description="evaluations cancelled"),
        observe("drover.broker.enabled",
                lambda: [(1 if core.stats().mode == "leader" else 0, {})], unit="1",
                description="1 while this replica's broker delivers (leader)"),
    ]

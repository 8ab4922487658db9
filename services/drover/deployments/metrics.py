"""The deployment watcher's domain metrics, read from the leader's stats at
scrape time (zero on followers).

* ``drover.deployments.active``: deployments with a watcher.
* ``drover.deployments.evaluations``: evaluations created (counter).
* ``drover.deployments.promotions``: canary groups promoted (counter).
* ``drover.deployments.outcomes``: deployments failed / succeeded, by
  ``outcome`` (counter).
* ``drover.deployments.state_writes``: writes to the state service (counter).

Counters are cumulative over the current leadership term (a new term
restarts them: a counter reset to Prometheus).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from drover.telemetry.observed import observe

from .leader import LeaderStats


class StatsSource(Protocol):
    def stats(self) -> LeaderStats: ...


def register(leader: StatsSource) -> list[Callable[[], None]]:
    def watchers(field: str) -> Callable[[], list[tuple[float, dict[str, str]]]]:
        def read() -> list[tuple[float, dict[str, str]]]:
            w = leader.stats().watchers
            return [(getattr(w, field) if w is not None else 0, {})]
        return read

    def outcomes() -> list[tuple[float, dict[str, str]]]:
        w = leader.stats().watchers
        failed, succeeded = (w.failures, w.successes) if w is not None else (0, 0)
        return [(failed, {"outcome": "failed"}), (succeeded, {"outcome": "successful"})]

    return [
        observe("drover.deployments.active", watchers("active_watchers"), unit="{deployment}",
                description="active deployments with a watcher on the leader"),
        observe("drover.deployments.evaluations", watchers("evaluations_created"),
                kind="counter", unit="{evaluation}",
                description="follow-up evaluations the watcher created"),
        observe("drover.deployments.promotions", watchers("promotions"), kind="counter",
                unit="{group}", description="canary task groups promoted"),
        observe("drover.deployments.outcomes", outcomes, kind="counter", unit="{deployment}",
                description="deployments the watcher failed or marked successful"),
        observe("drover.deployments.state_writes",
                lambda: [(leader.stats().state_writes, {})], kind="counter", unit="{write}",
                description="writes of the watcher to the state service"),
    ]

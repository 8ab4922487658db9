"""The deployment watcher's tunables, every config dataclass of the service
in one module: the leader's (:class:`LeaderConfig`, with the evaluation
batcher's :class:`BatcherConfig`), the node drainer's and the garbage
collector's. Defaults a flag sets live in :data:`drover.config.TUNABLES`;
:mod:`drover.deployments.app` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.config import GcSettings, check_tunables, tunable_default

__all__ = ["BatcherConfig", "DrainerConfig", "GcConfig", "LeaderConfig"]


@dataclass(frozen=True)
class BatcherConfig:
    window: float = tunable_default("deployments_batch_window")
    max_batch: int = tunable_default("deployments_batch_max")
    #: A deployment write that only moves counts waits up to this long for
    #: the ones behind it (:func:`.coalesce.hold_for`); 0 writes each at once.
    progress_window: float = tunable_default("deployments_progress_window")

    def __post_init__(self) -> None:
        check_tunables(self)


@dataclass(frozen=True)
class DrainerConfig:
    #: At most one pass per this many seconds (Nomad's BatchUpdateInterval).
    batch_interval: float = 1.0
    max_sleep: float = 5.0
    resync_backoff: float = 0.5
    stop_timeout: float = 2.0


@dataclass(frozen=True)
class GcConfig:
    """Thresholds in seconds (an object must be at least this old to go)."""

    interval: float = GcSettings.interval
    eval_threshold: float = GcSettings.eval_threshold
    deployment_threshold: float = GcSettings.deployment_threshold
    job_threshold: float = GcSettings.job_threshold
    node_threshold: float = GcSettings.node_threshold
    max_examined: int = 1000
    pace: float = 0.0

    @classmethod
    def from_settings(cls, s: GcSettings) -> GcConfig:
        return cls(interval=s.interval, eval_threshold=s.eval_threshold,
                   deployment_threshold=s.deployment_threshold,
                   job_threshold=s.job_threshold, node_threshold=s.node_threshold)

    def threshold(self, kind: str) -> float:
        return {"jobs": self.job_threshold, "evaluations": self.eval_threshold,
                "deployments": self.deployment_threshold,
                "nodes": self.node_threshold}[kind]


@dataclass(frozen=True)
class LeaderConfig:
    batcher: BatcherConfig = field(default_factory=BatcherConfig)
    #: How long establishing a term may take to list the active deployments
    #: (the barrier read; their restore goes on after it: leader.py)
    restore_timeout: float = 8.0
    track_concurrency: int = 16
    resync_backoff: float = 0.5
    call_timeout: float = 10.0
    #: A steering call whose write met a conflict with drover's own writers
    #: (the watcher's decisions, the scheduler's allocations) is decided
    #: again on the re-read deployment, up to this many times in all
    #: (issue 41: such a conflict never reaches a user).
    conflict_attempts: int = 5
    # The timer recomputes the earliest deadline over all watchers, and the
    # watchers woken by allocation changes step: each at most once per tick,
    # so a burst of events costs one pass, not one per event.
    min_tick: float = 0.05
    max_sleep: float = 5.0
    #: Every this many seconds the leader re-lists the active deployments
    #: (one paged query); one found active, unwatched and unchanged two
    #: audits in a row is tracked again (:mod:`.audit`).
    audit_interval: float = 10.0
    #: Revoking waits this long for the cancelled leader loop (``drover.tasks``).
    stop_timeout: float = 2.0

"""What a simulated node's client reports about one allocation, and when (pure).

It follows Nomad's client: an allocation placed on the node starts (client
status running); when it belongs to a deployment its health is reported
once it has been running for the group's ``min_healthy_time``, or as
unhealthy when it is not healthy by ``healthy_deadline``; a stopped one
completes; a batch allocation completes after it has run.

Outcomes are steerable for demos and tests by meta on the task group or the
job (the group wins), or a task's config:

- ``sim.outcome``: ``healthy`` (default), ``fail`` (fails on start),
  ``crash`` (healthy first, then fails after ``sim.crash_after`` seconds),
  ``never_healthy`` (runs, never passes its checks: unhealthy at the
  deadline);
- ``sim.start_after`` (seconds before it runs, default 0.2),
  ``sim.run_for`` (batch: seconds before it completes, default 1),
  ``sim.crash_after`` (default 3).

Defaults for an unset update block are Nomad's: min_healthy_time 10 s,
healthy_deadline 5 min. A service allocation outside any deployment reports
its health too, timed by the group's ``migrate`` block (Nomad's client
watches health by the migrate block then): the node drainer moves the next
allocation of a group only once the replacement's health is known.
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.drain.migrate import migrate_of

RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE

OUTCOMES = ("healthy", "fail", "crash", "never_healthy")


@dataclass(frozen=True)
class Behaviour:
    outcome: str = "healthy"
    start_after: float = 0.2
    run_for: float = 1.0
    crash_after: float = 3.0
    min_healthy: float = 10.0
    healthy_deadline: float = 300.0
    batch: bool = False
    #: Outside a deployment: the migrate block's (Nomad's defaults when unset).
    migrate_min_healthy: float = 10.0
    migrate_healthy_deadline: float = 300.0


def _seconds(d: object, default: float) -> float:
    secs = getattr(d, "seconds", 0) + getattr(d, "nanos", 0) / 1e9
    return secs if secs > 0 else default


def _float(v: str | None, default: float) -> float:
    try:
        return float(v) if v is not None else default
    except ValueError:
        return default


def behaviour_of(job: job_pb2.Job, group: str) -> Behaviour:
    tg = next((g for g in job.task_groups if g.name == group), None)
    meta: dict[str, str] = dict(job.meta)
    if tg is not None:
        for task in tg.tasks:
            meta.update({k: v for k, v in task.config.items() if k.startswith("sim.")})
        meta.update(tg.meta)
    outcome = meta.get("sim.outcome", "healthy")
    if outcome not in OUTCOMES:
        outcome = "healthy"
    update = tg.update if tg is not None and tg.HasField("update") else None
    migrate = migrate_of(tg if tg is not None else job_pb2.TaskGroup())
    return Behaviour(
        outcome=outcome,
        start_after=_float(meta.get("sim.start_after"), 0.2),
        run_for=_float(meta.get("sim.run_for"), 1.0),
        crash_after=_float(meta.get("sim.crash_after"), 3.0),
        min_healthy=_seconds(update.min_healthy_time, 10.0) if update else 10.0,
        healthy_deadline=_seconds(update.healthy_deadline, 300.0) if update else 300.0,
        batch=job.type == job_pb2.JOB_TYPE_BATCH,
        migrate_min_healthy=migrate.min_healthy_time,
        migrate_healthy_deadline=migrate.healthy_deadline,
    )


@dataclass(frozen=True)
class Report:
    """One AllocationUpdate to send (``healthy`` None leaves health alone)."""

    client_status: int = 0
    description: str = ""
    healthy: bool | None = None


class Track:
    """One allocation on the node, as its client sees it."""

    __slots__ = ("deployment", "done", "health_since", "healthy", "running_at", "seen_at",
                 "stopping")

    def __init__(self, now: float, deployment: bool) -> None:
        self.seen_at = now
        self.running_at: float | None = None
        self.health_since = now  # when the health clock (re)started
        self.healthy: bool | None = None
        self.deployment = deployment
        self.stopping = False
        self.done = False

    def observe(self, alloc: allocation_pb2.Allocation, now: float) -> None:
        """A new stored version of the allocation."""
        if alloc.desired_status != allocation_pb2.ALLOC_DESIRED_STATUS_RUN:
            self.stopping = True
        has = alloc.deployment_status.HasField("healthy")
        if alloc.deployment_id and not has and self.healthy is not None and not self.done:
            # updated in place into a new deployment: health is reported afresh
            self.healthy, self.health_since = None, now
        self.deployment = bool(alloc.deployment_id)


def wake_at(t: Track, b: Behaviour) -> float | None:
    """The earliest time at which :func:`step` can report or change ``t``,
    until a new version of the allocation is observed; None: never (a
    running, healthy service allocation: its node has nothing to say about
    it until the scheduler changes it). Before that time step returns None
    and leaves ``t`` as it is, so a node need not step ``t`` until then."""
    if t.done or t.stopping:
        return float("-inf")  # due at once: the stop's report, or forgetting it
    if t.running_at is None:
        return t.seen_at + b.start_after
    if b.batch:
        return t.running_at + b.run_for
    times = []
    if b.outcome == "crash":
        times.append(t.running_at + b.crash_after)
    if t.healthy is None:
        min_healthy, deadline = ((b.min_healthy, b.healthy_deadline) if t.deployment
                                 else (b.migrate_min_healthy, b.migrate_healthy_deadline))
        if b.outcome in ("healthy", "crash"):
            times.append(t.health_since + min_healthy)
        times.append(t.health_since + deadline)
    return min(times, default=None)


def step(t: Track, b: Behaviour, now: float) -> Report | None:
    """The next report due for ``t`` at ``now``, applied to ``t``; None if none."""
    if t.done:
        return None
    if t.stopping:
        t.done = True
        return Report(COMPLETE, "stopped by the scheduler")
    if t.running_at is None:
        if now < t.seen_at + b.start_after:
            return None
        if b.outcome == "fail":
            t.done = True
            return Report(FAILED, "task failed to start (sim.outcome=fail)",
                          False if t.deployment else None)
        t.running_at = now
        t.health_since = max(t.health_since, now)
        return Report(RUNNING, "task is running")
    if b.batch:
        if now >= t.running_at + b.run_for:
            t.done = True
            return Report(COMPLETE, "task completed")
        return None
    if b.outcome == "crash" and now >= t.running_at + b.crash_after:
        t.done = True
        return Report(FAILED, "task crashed (sim.outcome=crash)",
                      False if t.deployment and t.healthy is None else None)
    if t.healthy is None:
        min_healthy, deadline = ((b.min_healthy, b.healthy_deadline) if t.deployment
                                 else (b.migrate_min_healthy, b.migrate_healthy_deadline))
        if b.outcome in ("healthy", "crash") and now >= t.health_since + min_healthy:
            t.healthy = True
            return Report(healthy=True, description="task healthy for min_healthy_time")
        if now >= t.health_since + deadline:
            t.healthy = False
            return Report(healthy=False, description="task not healthy by healthy_deadline")
    return None

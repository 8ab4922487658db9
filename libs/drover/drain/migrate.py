"""A task group's ``migrate`` block with Nomad's defaults (``DefaultMigrateStrategy``).

Only service groups migrate by the block: a batch allocation on a draining
node runs until it finishes or the drain's deadline, and a system job's
allocations are drained last (or not at all). An unset block, or an unset
field of a set one, takes Nomad's default: ``max_parallel`` 1,
``health_check`` "checks", ``min_healthy_time`` 10 s, ``healthy_deadline``
5 min. ``max_parallel`` 0 is kept (nothing leaves before the deadline).
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.api.types.v1 import job_pb2

MAX_PARALLEL = 1
HEALTH_CHECK = "checks"
MIN_HEALTHY_TIME = 10.0
HEALTHY_DEADLINE = 300.0
HEALTH_CHECKS = ("checks", "task_states")


@dataclass(frozen=True)
class Migrate:
    """A group's migrate block with every field resolved (seconds for durations)."""

    max_parallel: int = MAX_PARALLEL
    health_check: str = HEALTH_CHECK
    min_healthy_time: float = MIN_HEALTHY_TIME
    healthy_deadline: float = HEALTHY_DEADLINE


def _seconds(d: object) -> float:
    return float(getattr(d, "seconds", 0) + getattr(d, "nanos", 0) / 1e9)


def migrate_of(tg: job_pb2.TaskGroup) -> Migrate:
    """The group's migrate block, Nomad's defaults filling what is unset."""
    if not tg.HasField("migrate"):
        return Migrate()
    m = tg.migrate
    return Migrate(
        max_parallel=m.max_parallel if m.HasField("max_parallel") else MAX_PARALLEL,
        health_check=m.health_check or HEALTH_CHECK,
        min_healthy_time=(_seconds(m.min_healthy_time) if m.HasField("min_healthy_time")
                          else MIN_HEALTHY_TIME),
        healthy_deadline=(_seconds(m.healthy_deadline) if m.HasField("healthy_deadline")
                          else HEALTHY_DEADLINE))


def validate(m: Migrate) -> list[str]:
    """Nomad's MigrateStrategy.Validate, as messages (empty: valid)."""
    errs = []
    if m.max_parallel < 0:
        errs.append(f"migrate max_parallel must be >= 0 (got {m.max_parallel})")
    if m.health_check not in HEALTH_CHECKS:
        errs.append(f"migrate health_check must be one of {', '.join(HEALTH_CHECKS)}"
                    f" (got {m.health_check!r})")
    if m.min_healthy_time < 0 or m.healthy_deadline < 0:
        errs.append("migrate durations must be >= 0")
    elif m.min_healthy_time >= m.healthy_deadline:
        errs.append("migrate min_healthy_time must be less than healthy_deadline")
    return errs

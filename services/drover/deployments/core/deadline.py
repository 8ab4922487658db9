"""The progress-deadline rule, in one place.

A group's ``require_progress_by`` says by when the deployment must have made
progress (a newly healthy allocation) or fail. Nomad spreads this rule over
the scheduler, the state store and the watcher, and it broke repeatedly at
the seams (deadlines firing while paused, not reset on promotion). Here the
whole rule is :func:`next_progress_deadline`, one pure function of the group,
an explicit event and the time:

=================  ==========================================================
event              new ``require_progress_by``
=================  ==========================================================
FIRST_PLACEMENT    ``at + progress_deadline`` unless already armed; ``at`` is
                   when the first allocation was placed, as the allocations
                   record it (Nomad's rule), so any leader arms the same one
NEW_HEALTHY        ``max(current, now + progress_deadline)``: only extends
PROMOTED           ``now + progress_deadline`` for a canary group (the rest
                   of the group starts placing now); unchanged otherwise
PAUSED             cleared: a paused deployment has no deadline
RESUMED            ``now + progress_deadline`` if anything was placed; else
                   cleared (the first placement arms it)
=================  ==========================================================

A group with no ``progress_deadline`` never has a deadline. Enforcement
(:func:`deadline_missed`, :func:`earliest_deadline`) looks only at running
deployments and skips groups that are complete or whose canaries are all
healthy and wait for a manual promotion: waiting for an operator is not a
lack of progress.
"""

from __future__ import annotations

import enum

from drover.api.types.v1 import deployment_pb2

from .accounting import awaiting_promotion, group_complete, has_canaries
from .walltime import duration_seconds, from_timestamp

RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING


class ProgressEvent(enum.Enum):
    FIRST_PLACEMENT = "first-placement"
    NEW_HEALTHY = "new-healthy"
    PROMOTED = "promoted"
    PAUSED = "paused"
    RESUMED = "resumed"


def first_placement_at(first_placed: float | None, deployment_created: float | None,
                       now: float) -> float:
    """When a group's first allocation was placed, as its allocations record
    it (the earliest create time among those placed; Nomad arms the first
    deadline from the allocation's time, not the watcher's): an allocation
    updated in place into the deployment counts from the deployment's
    creation, and none from later than ``now`` (another process's clock may
    run ahead). ``now`` when no allocation records it."""
    if first_placed is None:
        return now
    if deployment_created is not None:
        first_placed = max(first_placed, deployment_created)
    return min(now, first_placed)


def next_progress_deadline(
    group: deployment_pb2.DeploymentGroupState, event: ProgressEvent, now: float
) -> float | None:
    """The group's ``require_progress_by`` after ``event`` at ``now`` (None: none)."""
    window = duration_seconds(group.progress_deadline)
    current = from_timestamp(group.require_progress_by)
    if window <= 0:
        return None
    if event is ProgressEvent.FIRST_PLACEMENT:
        return current if current is not None else now + window
    if event is ProgressEvent.NEW_HEALTHY:
        return now + window if current is None else max(current, now + window)
    if event is ProgressEvent.PROMOTED:
        return now + window if has_canaries(group) else current
    if event is ProgressEvent.PAUSED:
        return None
    if event is ProgressEvent.RESUMED:
        return now + window if group.placed_allocs > 0 else None
    raise AssertionError(f"unhandled progress event {event!r}")


def _enforced(group: deployment_pb2.DeploymentGroupState) -> float | None:
    if group_complete(group) or awaiting_promotion(group):
        return None
    return from_timestamp(group.require_progress_by)


def deadline_missed(deployment: deployment_pb2.Deployment, now: float) -> str | None:
    """The group whose enforced deadline passed first (ties: by name), if any."""
    if deployment.status != RUNNING:
        return None
    missed = [
        (deadline, name)
        for name, group in deployment.task_groups.items()
        if (deadline := _enforced(group)) is not None and deadline <= now
    ]
    return min(missed)[1] if missed else None


def earliest_deadline(deployment: deployment_pb2.Deployment) -> float | None:
    """When :func:`deadline_missed` could next answer a group (for the shell's sleep)."""
    if deployment.status != RUNNING:
        return None
    deadlines = [
        d for g in deployment.task_groups.values() if (d := _enforced(g)) is not None
    ]
    return min(deadlines) if deadlines else None

"""Which job version a failed deployment rolls back to, if any.

A pure function over the job's version history (newest first, as
``ListJobVersions`` answers); descriptions in Nomad's words
(:mod:`drover.rollback_text`). The target is the newest *stable* version older
than the failed one. Two cases are refused, each with a description that says
so, because silently doing nothing leaves the operator guessing:

- no stable version exists;
- the stable version has the same spec as the failed one. Registering it
  would create a version identical to the one that just failed, whose
  deployment would fail and revert again: a revert loop. (This happens when a
  revert itself fails: v1 stable, v2 fails → v3 = v1's spec, v3 fails.)

"Same spec" ignores what changes with every registration or deployment
outcome: version, stable, status, status description, indexes, submit time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from drover import rollback_text
from drover.api.types.v1 import job_pb2

# Fields that describe a version's bookkeeping, not what the user asked for.
_NOT_SPEC = (
    "version",
    "stable",
    "status",
    "status_description",
    "create_index",
    "modify_index",
    "job_modify_index",
    "submit_time",
)


def spec_of(job: job_pb2.Job) -> job_pb2.Job:
    spec = job_pb2.Job()
    spec.CopyFrom(job)
    for name in _NOT_SPEC:
        spec.ClearField(name)
    return spec


def same_spec(a: job_pb2.Job, b: job_pb2.Job) -> bool:
    return spec_of(a) == spec_of(b)


@dataclass(frozen=True)
class RevertChoice:
    """``target`` is the version to register again, or None with the reason why not."""

    description: str
    to_version: int | None = None
    target: job_pb2.Job | None = field(default=None, compare=False, repr=False)


def choose_revert(
    failed: job_pb2.Job, versions: Sequence[job_pb2.Job], failure: str
) -> RevertChoice:
    """Pick the rollback for ``failed`` from ``versions`` (newest first).

    ``failure`` is the deployment's failure description; the choice's
    description extends it with what happened to the revert.
    """
    # max() rather than "first": correct even if the caller's order is not.
    candidates = [v for v in versions if v.stable and v.version < failed.version]
    stable = max(candidates, key=lambda v: v.version) if candidates else None
    if stable is None:
        return RevertChoice(rollback_text.no_rollback_target(failure))
    if same_spec(stable, failed):
        return RevertChoice(rollback_text.rollback_noop(failure, stable.version))
    return RevertChoice(
        rollback_text.rolling_back(failure, stable.version),
        to_version=stable.version,
        target=stable,
    )

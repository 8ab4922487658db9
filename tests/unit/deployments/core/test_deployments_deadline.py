"""The progress-deadline rule: every event, the paused case, enforcement."""

from __future__ import annotations

import pytest
from deployments_builders import PAUSED, T0, G, deployment

from drover.api.types.v1 import deployment_pb2
from drover.deployments.core.deadline import (
    ProgressEvent,
    deadline_missed,
    earliest_deadline,
    next_progress_deadline,
)
from drover.deployments.core.walltime import from_timestamp, to_timestamp

WINDOW = 600.0


def group(
    *,
    deadline: float | None = None,
    window: float = WINDOW,
    placed: int = 0,
    healthy: int = 0,
    total: int = 3,
    canaries: int = 0,
    promoted: bool = False,
) -> deployment_pb2.DeploymentGroupState:
    g = deployment_pb2.DeploymentGroupState(
        desired_total=total,
        desired_canaries=canaries,
        placed_allocs=placed,
        healthy_allocs=healthy,
        promoted=promoted,
    )
    g.progress_deadline.FromNanoseconds(int(window * 1e9))
    if deadline is not None:
        g.require_progress_by.CopyFrom(to_timestamp(deadline))
    return g


def test_first_placement_arms_the_deadline() -> None:
    assert next_progress_deadline(group(), ProgressEvent.FIRST_PLACEMENT, T0) == T0 + WINDOW


def test_first_placement_keeps_an_armed_deadline() -> None:
    g = group(deadline=T0 + 5, placed=1)
    assert next_progress_deadline(g, ProgressEvent.FIRST_PLACEMENT, T0 + 100) == T0 + 5


def test_new_healthy_extends_the_deadline() -> None:
    g = group(deadline=T0 + WINDOW, placed=2)
    assert next_progress_deadline(g, ProgressEvent.NEW_HEALTHY, T0 + 30) == T0 + 30 + WINDOW


def test_new_healthy_never_shortens_the_deadline() -> None:
    # A health report stamped earlier than the current deadline's base.
    g = group(deadline=T0 + 2 * WINDOW, placed=2)
    assert next_progress_deadline(g, ProgressEvent.NEW_HEALTHY, T0) == T0 + 2 * WINDOW


def test_new_healthy_arms_an_unarmed_deadline() -> None:
    g = group(placed=1)
    assert next_progress_deadline(g, ProgressEvent.NEW_HEALTHY, T0 + 1) == T0 + 1 + WINDOW


def test_promotion_resets_a_canary_group_deadline() -> None:
    # A reset, not an extension: the rest of the group starts placing now.
    g = group(deadline=T0 + 10 * WINDOW, placed=1, healthy=1, canaries=1)
    assert next_progress_deadline(g, ProgressEvent.PROMOTED, T0 + 50) == T0 + 50 + WINDOW


def test_promotion_leaves_a_group_without_canaries_alone() -> None:
    g = group(deadline=T0 + 7, placed=1)
    assert next_progress_deadline(g, ProgressEvent.PROMOTED, T0 + 50) == T0 + 7


def test_pause_clears_the_deadline() -> None:
    g = group(deadline=T0 + WINDOW, placed=1)
    assert next_progress_deadline(g, ProgressEvent.PAUSED, T0 + 1) is None


def test_resume_restarts_the_deadline_of_a_placed_group() -> None:
    g = group(placed=1)  # cleared by the pause
    assert next_progress_deadline(g, ProgressEvent.RESUMED, T0 + 900) == T0 + 900 + WINDOW


def test_resume_leaves_an_unplaced_group_for_its_first_placement() -> None:
    assert next_progress_deadline(group(), ProgressEvent.RESUMED, T0) is None


@pytest.mark.parametrize("event", list(ProgressEvent))
def test_no_progress_deadline_means_no_deadline_for_every_event(event: ProgressEvent) -> None:
    g = group(window=0, placed=1, canaries=1, deadline=T0 + 3)
    assert next_progress_deadline(g, event, T0) is None


def _with_deadline(d: deployment_pb2.Deployment, name: str, at: float, **fields: int) -> None:
    state = d.task_groups[name]
    state.require_progress_by.CopyFrom(to_timestamp(at))
    for key, value in fields.items():
        setattr(state, key, value)


def test_deadline_missed_names_the_group_whose_deadline_passed_first() -> None:
    d = deployment(groups={"api": G(), "web": G()})
    _with_deadline(d, "api", T0 + 20, placed_allocs=1)
    _with_deadline(d, "web", T0 + 10, placed_allocs=1)
    assert deadline_missed(d, T0 + 9.999) is None
    assert deadline_missed(d, T0 + 10) == "web"
    assert deadline_missed(d, T0 + 30) == "web"
    assert earliest_deadline(d) == pytest.approx(T0 + 10)


def test_a_paused_deployment_is_not_failed_by_a_passed_deadline() -> None:
    d = deployment(status=PAUSED)
    _with_deadline(d, "web", T0 + 10, placed_allocs=1)
    assert deadline_missed(d, T0 + 10_000) is None
    assert earliest_deadline(d) is None


def test_complete_groups_are_not_enforced() -> None:
    d = deployment(groups={"web": G(total=2)})
    _with_deadline(d, "web", T0 + 10, placed_allocs=2, healthy_allocs=2)
    assert deadline_missed(d, T0 + 100) is None
    assert earliest_deadline(d) is None


def test_groups_waiting_for_manual_promotion_are_not_enforced() -> None:
    d = deployment(groups={"web": G(total=3, canaries=1)})
    _with_deadline(d, "web", T0 + 10, placed_allocs=1, healthy_allocs=1)
    assert deadline_missed(d, T0 + 100) is None
    d.task_groups["web"].healthy_allocs = 0  # the canary is not healthy yet: enforced
    assert deadline_missed(d, T0 + 100) == "web"


def test_unarmed_deadlines_never_fire() -> None:
    d = deployment()
    assert deadline_missed(d, T0 + 10**9) is None
    assert earliest_deadline(d) is None


def test_timestamps_round_trip_and_unset_is_none() -> None:
    assert from_timestamp(to_timestamp(T0 + 0.25)) == pytest.approx(T0 + 0.25)
    assert from_timestamp(deployment_pb2.DeploymentGroupState().require_progress_by) is None

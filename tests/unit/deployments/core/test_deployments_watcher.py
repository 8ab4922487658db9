"""One watcher's automatic steps: accounting, deadlines, failure, revert, success."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from deployments_builders import FAILED, PAUSED, RUNNING, SUCCESSFUL, T0, G, alloc, deployment, job

from drover.api.types.v1 import allocation_pb2, deployment_pb2
from drover.deployments.core.effects import GroupUpdate, MarkJobStable, RevertJob, apply_update
from drover.deployments.core.walltime import from_timestamp, to_timestamp
from drover.deployments.core.watcher import DeploymentWatcher

WINDOW = 600.0


def watcher(
    groups: dict[str, G] | None = None,
    allocs: Sequence[allocation_pb2.Allocation] = (),
    *,
    history: Sequence[int] = (1,),
    status: deployment_pb2.DeploymentStatus = RUNNING,
    current_image: str = "web:2",
) -> DeploymentWatcher:
    """Deployment d1 of job version 2; ``history`` lists stable older versions."""
    versions = [job(2, image=current_image, groups=groups)]
    versions += [job(v, stable=True, image=f"web:{v}", groups=groups) for v in history]
    return DeploymentWatcher(deployment(groups=groups, status=status), versions, allocs)


def deadline(w: DeploymentWatcher, group: str = "web") -> float | None:
    return from_timestamp(w.deployment.task_groups[group].require_progress_by)


def test_first_placement_counts_and_arms_the_deadline() -> None:
    w = watcher()
    d = w.on_alloc(alloc("a1"), T0)
    assert d.update is not None
    assert d.update.groups == (GroupUpdate("web", 1, (), 0, 0, False, T0 + WINDOW),)
    assert d.update.status == RUNNING
    assert d.evaluation is None and d.follow_up is None and d.revert is None


def test_newly_healthy_extends_the_deadline_and_asks_for_the_next_batch() -> None:
    w = watcher()
    w.on_alloc(alloc("a1"), T0)
    d = w.on_alloc(alloc("a1", healthy=True), T0 + 500)
    assert d.update is not None and d.update.groups[0].healthy_allocs == 1
    assert deadline(w) == pytest.approx(T0 + 500 + WINDOW)
    assert d.follow_up is not None
    assert d.follow_up.triggered_by == "deployment-watcher"
    assert (d.follow_up.job_id, d.follow_up.deployment_id, d.follow_up.priority) == (
        "shop", "d1", 70,
    )
    assert d.evaluation is None


def test_counts_and_deadlines_may_wait_until_the_status_changes() -> None:
    w = watcher({"web": G(total=2)})
    first = w.on_alloc(alloc("a1"), T0)
    # Arms the first deadline, which any leader re-derives: it may wait too.
    assert first.update is not None and first.update.counts_only
    assert first.update.groups[0].require_progress_by == T0 + WINDOW
    second = w.on_alloc(alloc("a2"), T0 + 1)
    assert second.update is not None and second.update.counts_only
    healthy = w.on_alloc(alloc("a1", healthy=True), T0 + 2)
    # All placed: no follow-up, and the new count and deadline may wait.
    assert healthy.update is not None and healthy.update.counts_only
    assert healthy.follow_up is None and healthy.evaluation is None
    done = w.on_alloc(alloc("a2", healthy=True), T0 + 3)
    assert done.update is not None and done.update.status == SUCCESSFUL
    assert not done.update.counts_only


def _placed_at(alloc_id: str, at: float) -> allocation_pb2.Allocation:
    a = alloc(alloc_id)
    a.create_time.CopyFrom(to_timestamp(at))
    return a


def test_the_first_deadline_is_armed_from_the_first_placement_as_recorded() -> None:
    """Any leader arms the same first deadline: from the earliest placed
    allocation's create time (not the step's clock), not before the
    deployment was created (an allocation updated in place into it), and
    never from later than the step's clock."""
    w = watcher({"web": G(total=3)}, [_placed_at("a1", T0 + 7), _placed_at("a2", T0 + 3)])
    w.reconcile(T0 + 60)
    assert deadline(w) == T0 + 3 + WINDOW
    created = deployment()
    created.create_time.CopyFrom(to_timestamp(T0 + 5))
    moved = DeploymentWatcher(created, [job(2)], [_placed_at("old", T0 - 900)])
    moved.reconcile(T0 + 60)
    assert deadline(moved) == T0 + 5 + WINDOW
    ahead = watcher({"web": G(total=3)}, [_placed_at("a1", T0 + 90)])
    ahead.reconcile(T0 + 60)
    assert deadline(ahead) == T0 + 60 + WINDOW


def test_a_redelivered_allocation_decides_nothing() -> None:
    w = watcher()
    w.on_alloc(alloc("a1", healthy=True), T0)
    assert w.on_alloc(alloc("a1", healthy=True), T0 + 1).empty


def test_foreign_allocations_are_not_counted() -> None:
    w = watcher()
    assert w.on_alloc(alloc("x", deployment_id="d2"), T0).empty
    assert w.allocation_ids() == frozenset()


def test_unhealthy_allocation_fails_the_deployment() -> None:
    w = watcher()
    d = w.on_alloc(alloc("a1", healthy=False), T0)
    assert d.update is not None
    assert (d.update.status, d.update.description) == (
        FAILED, "Failed due to unhealthy allocations",
    )
    assert d.update.groups[0].unhealthy_allocs == 1
    assert d.evaluation is not None and d.revert is None and d.mark_stable is None
    assert not w.active
    assert w.on_alloc(alloc("a2", healthy=True), T0 + 1).empty  # terminal: no more steps


def test_unhealthy_with_auto_revert_rolls_back_to_the_latest_stable_version() -> None:
    w = watcher({"web": G(auto_revert=True)}, history=(1,))
    d = w.on_alloc(alloc("a1", healthy=False), T0)
    assert d.update is not None
    assert d.update.description == (
        "Failed due to unhealthy allocations - rolling back to job version 1"
    )
    assert d.revert == RevertJob("default", "shop", 1, expected_job_modify_index=102)
    assert d.revert is not None and d.revert.job.version == 1
    assert d.evaluation is not None


def test_auto_revert_to_the_same_spec_is_skipped() -> None:
    w = watcher({"web": G(auto_revert=True)}, history=(1,), current_image="web:1")
    d = w.on_alloc(alloc("a1", healthy=False), T0)
    assert d.revert is None
    assert d.update is not None and d.update.description == (
        "Failed due to unhealthy allocations - not rolling back to stable job version 1 as"
        " current job has same specification"
    )


def test_auto_revert_without_a_stable_version_says_so() -> None:
    w = watcher({"web": G(auto_revert=True)}, history=())
    d = w.on_alloc(alloc("a1", healthy=False), T0)
    assert d.revert is None
    assert d.update is not None and d.update.description == (
        "Failed due to unhealthy allocations - no stable job version to auto revert to"
    )


def test_only_the_unhealthy_groups_auto_revert_counts() -> None:
    w = watcher({"web": G(auto_revert=False), "api": G(auto_revert=True)})
    d = w.on_alloc(alloc("a1", healthy=False), T0)
    assert d.revert is None


def test_missed_progress_deadline_fails_the_deployment() -> None:
    w = watcher({"web": G(auto_revert=True)})
    w.on_alloc(alloc("a1"), T0)
    assert w.check_deadline(T0 + WINDOW - 0.001).empty
    d = w.check_deadline(T0 + WINDOW)
    assert d.update is not None and d.update.status == FAILED
    assert d.update.description == (
        "Failed due to progress deadline of task group web - rolling back to job version 1"
    )
    assert d.revert is not None and d.revert.to_version == 1
    assert d.evaluation is not None


def test_healthy_progress_keeps_the_deployment_alive_past_the_first_deadline() -> None:
    w = watcher({"web": G(total=3)})
    w.on_alloc(alloc("a1"), T0)
    w.on_alloc(alloc("a1", healthy=True), T0 + 500)
    assert w.check_deadline(T0 + WINDOW + 1).empty
    assert not w.check_deadline(T0 + 500 + WINDOW).empty


def test_a_paused_deployment_is_not_failed_and_resume_restarts_the_clock() -> None:
    w = watcher()
    w.on_alloc(alloc("a1"), T0)
    paused = w.pause(True, T0 + 10)
    assert paused.update is not None and paused.update.status == PAUSED
    assert paused.update.groups[0].require_progress_by is None
    assert paused.evaluation is None
    assert w.check_deadline(T0 + 100 * WINDOW).empty
    # Health arriving while paused is counted but arms nothing.
    w.on_alloc(alloc("a2"), T0 + 20)
    assert deadline(w) is None
    resumed = w.pause(False, T0 + 100 * WINDOW)
    assert resumed.update is not None and resumed.update.status == RUNNING
    assert deadline(w) == pytest.approx(T0 + 101 * WINDOW)
    assert resumed.evaluation is not None


def test_all_groups_healthy_marks_success_and_the_job_stable() -> None:
    w = watcher({"web": G(total=2), "api": G(total=1)})
    w.on_alloc(alloc("w1", healthy=True), T0)
    w.on_alloc(alloc("a1", group="api", healthy=True), T0)
    d = w.on_alloc(alloc("w2", healthy=True), T0 + 1)
    assert d.update is not None
    assert (d.update.status, d.update.description) == (
        SUCCESSFUL, "Deployment completed successfully",
    )
    assert d.mark_stable == MarkJobStable("default", "shop", 2)
    assert d.follow_up is None and d.evaluation is None
    assert not w.active


def test_healthy_canaries_without_auto_promote_wait_for_an_operator() -> None:
    w = watcher({"web": G(total=3, canaries=1)})
    d = w.on_alloc(alloc("c1", canary=True, healthy=True), T0)
    assert d.update is not None
    assert d.update.groups[0].placed_canaries == ("c1",)
    assert d.update.groups[0].promoted is False
    assert d.follow_up is None  # the rollout is blocked until promotion
    assert w.active


def test_auto_promote_waits_for_every_canary_group() -> None:
    groups = {
        "web": G(total=3, canaries=1, auto_promote=True),
        "api": G(total=2, canaries=2, auto_promote=True),
    }
    w = watcher(groups)
    w.on_alloc(alloc("c1", canary=True, healthy=True), T0)
    w.on_alloc(alloc("k1", group="api", canary=True, healthy=True), T0)
    assert not w.deployment.task_groups["web"].promoted
    d = w.on_alloc(alloc("k2", group="api", canary=True, healthy=True), T0 + 5)
    assert d.update is not None
    assert {g.name: g.promoted for g in d.update.groups} == {"api": True, "web": True}
    assert deadline(w, "web") == pytest.approx(T0 + 5 + WINDOW)  # reset by promotion
    assert d.follow_up is not None


def test_no_auto_promote_when_one_canary_group_does_not_want_it() -> None:
    groups = {
        "web": G(total=3, canaries=1, auto_promote=True),
        "api": G(total=2, canaries=1, auto_promote=False),
    }
    w = watcher(groups)
    w.on_alloc(alloc("c1", canary=True, healthy=True), T0)
    w.on_alloc(alloc("k1", group="api", canary=True, healthy=True), T0)
    assert not any(g.promoted for g in w.deployment.task_groups.values())


def test_removed_allocations_are_not_counted_any_more() -> None:
    w = watcher({"web": G(total=3)})
    w.on_alloc(alloc("a1", healthy=True), T0)
    d = w.on_alloc_removed("a1", T0 + 1)
    assert d.update is not None and d.update.groups[0].healthy_allocs == 0
    assert w.on_alloc_removed("a1", T0 + 2).empty


def test_restore_reconciles_from_known_allocations() -> None:
    w = watcher({"web": G(total=2)}, [alloc("a1", healthy=True), alloc("a2", healthy=True)])
    d = w.reconcile(T0)
    assert d.update is not None and d.update.status == SUCCESSFUL


def test_our_own_write_echoed_back_decides_nothing() -> None:
    w = watcher()
    stored = deployment()
    d = w.on_alloc(alloc("a1"), T0)
    assert d.update is not None
    stored = apply_update(stored, d.update)
    stored.modify_index = 2
    assert w.observe_deployment(stored, T0 + 1).empty
    assert w.deployment == stored


def test_stale_deployment_versions_are_ignored() -> None:
    w = watcher()
    w.on_alloc(alloc("a1"), T0)
    assert w.observe_deployment(deployment(modify_index=1), T0 + 1).empty
    assert w.deployment.task_groups["web"].placed_allocs == 1


def test_a_newer_stored_version_is_adopted_and_reconciled() -> None:
    w = watcher()
    w.on_alloc(alloc("a1"), T0)
    newer = deployment(modify_index=5)  # e.g. another writer cleared the counts
    d = w.observe_deployment(newer, T0 + 1)
    assert d.update is not None and d.update.groups[0].placed_allocs == 1
    assert d.update.based_on_modify_index == 5


def test_a_watcher_needs_its_job_version() -> None:
    with pytest.raises(ValueError, match="lack its version 2"):
        DeploymentWatcher(deployment(), [job(1)])

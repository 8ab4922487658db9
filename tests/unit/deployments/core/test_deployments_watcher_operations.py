"""Manual operations: validation with exact error classes, reasons and messages."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from deployments_builders import (
    CANCELLED,
    FAILED,
    PAUSED,
    RUNNING,
    SUCCESSFUL,
    T0,
    G,
    alloc,
    deployment,
    job,
)

from drover.api.types.v1 import allocation_pb2, deployment_pb2
from drover.deployments.core.effects import UpdateAllocHealth
from drover.deployments.core.walltime import from_timestamp
from drover.deployments.core.watcher import DeploymentWatcher
from drover.deployments.errors import (
    AllocationNotInDeployment,
    CanariesUnhealthy,
    DeploymentNotActive,
    InvalidAllocHealth,
    NoCanaries,
    UnknownTaskGroup,
)
from drover.errors import FailedPrecondition, InvalidArgument

CANARY_GROUPS = {"web": G(total=3, canaries=2), "api": G(total=2, canaries=1), "db": G(total=1)}


def watcher(
    groups: dict[str, G] | None = None,
    allocs: Sequence[allocation_pb2.Allocation] = (),
    status: deployment_pb2.DeploymentStatus = RUNNING,
) -> DeploymentWatcher:
    versions = [job(2, groups=groups), job(1, stable=True, image="web:1", groups=groups)]
    return DeploymentWatcher(deployment(groups=groups, status=status), versions, allocs)


def test_error_classes_and_reasons() -> None:
    assert issubclass(CanariesUnhealthy, FailedPrecondition)
    assert CanariesUnhealthy.reason == "CANARIES_UNHEALTHY"
    assert issubclass(DeploymentNotActive, FailedPrecondition)
    assert DeploymentNotActive.reason == "DEPLOYMENT_NOT_ACTIVE"
    assert issubclass(NoCanaries, FailedPrecondition)
    assert issubclass(UnknownTaskGroup, InvalidArgument)
    assert issubclass(AllocationNotInDeployment, InvalidArgument)


@pytest.mark.parametrize("status", [FAILED, SUCCESSFUL, CANCELLED])
def test_inactive_deployments_refuse_every_operation(status: int) -> None:
    w = watcher(CANARY_GROUPS, status=status)  # type: ignore[arg-type]
    operations = [
        lambda: w.promote(None, T0),
        lambda: w.pause(True, T0),
        lambda: w.pause(False, T0),
        lambda: w.fail(T0),
        lambda: w.set_alloc_health(["a"], [], T0),
    ]
    name = deployment_pb2.DeploymentStatus.Name(status)
    for operation in operations:
        with pytest.raises(DeploymentNotActive) as err:
            operation()
        assert err.value.reason == "DEPLOYMENT_NOT_ACTIVE"
        assert err.value.message == f"deployment d1 is not active ({name})"


def test_promote_unknown_groups_is_invalid_argument() -> None:
    w = watcher(CANARY_GROUPS)
    with pytest.raises(UnknownTaskGroup) as err:
        w.promote(["web", "zeta", "alpha"], T0)
    assert err.value.message == "deployment d1 has no task group alpha, zeta"
    assert err.value.metadata == {"task_groups": "alpha,zeta"}


def test_promote_without_canaries_is_failed_precondition() -> None:
    with pytest.raises(NoCanaries) as err:
        watcher({"db": G(total=1)}).promote(None, T0)
    assert err.value.message == "deployment d1 has no canaries to promote in task group db"
    with pytest.raises(NoCanaries):
        watcher(CANARY_GROUPS).promote(["db"], T0)


def test_promote_rejects_unhealthy_canaries_with_the_exact_message() -> None:
    allocs = [
        alloc("c1", canary=True, healthy=True),
        alloc("c2", canary=True),
        alloc("k1", group="api", canary=True, healthy=False),
    ]
    w = watcher(CANARY_GROUPS, allocs)
    with pytest.raises(CanariesUnhealthy) as err:
        w.promote(["web"], T0)
    assert err.value.message == "task group web has 1/2 healthy canaries"
    assert err.value.reason == "CANARIES_UNHEALTHY"
    with pytest.raises(CanariesUnhealthy) as err:
        w.promote(None, T0)
    assert err.value.message == (
        "task group api has 0/1 healthy canaries; task group web has 1/2 healthy canaries"
    )
    assert err.value.metadata == {"task_groups": "api,web"}
    assert not w.deployment.task_groups["web"].promoted  # nothing changed


def test_promote_selected_group_resets_its_deadline_and_creates_an_evaluation() -> None:
    allocs = [alloc("c1", canary=True, healthy=True), alloc("c2", canary=True, healthy=True)]
    w = watcher(CANARY_GROUPS, allocs)
    d = w.promote(["web"], T0 + 30)
    assert d.update is not None
    web = next(g for g in d.update.groups if g.name == "web")
    assert web.promoted is True
    assert web.require_progress_by == pytest.approx(T0 + 30 + 600)
    assert not w.deployment.task_groups["api"].promoted
    assert d.evaluation is not None and d.evaluation.deployment_id == "d1"
    assert d.follow_up is None


def test_promote_all_canary_groups() -> None:
    allocs = [
        alloc("c1", canary=True, healthy=True),
        alloc("c2", canary=True, healthy=True),
        alloc("k1", group="api", canary=True, healthy=True),
    ]
    w = watcher(CANARY_GROUPS, allocs)
    w.promote(None, T0)
    assert {n: g.promoted for n, g in w.deployment.task_groups.items()} == {
        "web": True, "api": True, "db": False,
    }


def test_promoting_a_paused_deployment_arms_no_deadline() -> None:
    groups = {"web": G(total=3, canaries=1)}
    w = watcher(groups, [alloc("c1", canary=True, healthy=True)], status=PAUSED)
    w.promote(None, T0)
    state = w.deployment.task_groups["web"]
    assert state.promoted and from_timestamp(state.require_progress_by) is None


def test_promotion_that_completes_the_deployment_marks_it_successful() -> None:
    w = watcher({"web": G(total=1, canaries=1)}, [alloc("c1", canary=True, healthy=True)])
    d = w.promote(None, T0)
    assert d.update is not None and d.update.status == SUCCESSFUL
    assert d.mark_stable is not None and d.mark_stable.version == 2
    assert d.evaluation is not None


def test_pausing_twice_changes_nothing_the_second_time() -> None:
    w = watcher()
    assert w.pause(True, T0).update is not None
    assert w.pause(True, T0 + 1).empty


def test_manual_fail_reverts_when_a_group_asks() -> None:
    d = watcher({"web": G(), "api": G(auto_revert=True)}).fail(T0)
    assert d.update is not None and d.update.status == FAILED
    assert d.update.description == "Deployment marked as failed - rolling back to job version 1"
    assert d.revert is not None and d.revert.to_version == 1
    assert d.evaluation is not None


def test_manual_fail_without_auto_revert() -> None:
    d = watcher().fail(T0)
    assert d.update is not None and d.update.description == "Deployment marked as failed"
    assert d.revert is None


def test_set_alloc_health_needs_allocations() -> None:
    with pytest.raises(InvalidAllocHealth) as err:
        watcher().set_alloc_health([], [], T0)
    assert err.value.message == "at least one healthy or unhealthy allocation id is required"
    assert isinstance(err.value, InvalidArgument)


def test_set_alloc_health_refuses_an_allocation_in_both_lists() -> None:
    w = watcher(allocs=[alloc("a1"), alloc("a2")])
    with pytest.raises(InvalidAllocHealth) as err:
        w.set_alloc_health(["a1", "a2"], ["a2"], T0)
    assert err.value.message == "allocations marked both healthy and unhealthy: a2"


def test_set_alloc_health_names_allocations_of_other_deployments() -> None:
    w = watcher(allocs=[alloc("a1"), alloc("b1", deployment_id="d2")])
    with pytest.raises(AllocationNotInDeployment) as err:
        w.set_alloc_health(["a1", "zz", "b1"], ["nope"], T0)
    assert err.value.message == "allocations not in deployment d1: b1, nope, zz"
    assert err.value.metadata == {"allocation_ids": "b1,nope,zz"}
    assert w.deployment.task_groups["web"].healthy_allocs == 0  # nothing applied


def test_set_alloc_health_healthy_counts_and_creates_an_evaluation() -> None:
    w = watcher({"web": G(total=3)}, [alloc("a1"), alloc("a2")])
    d = w.set_alloc_health(["a1", "a2", "a1"], [], T0 + 3)
    assert d.alloc_health == UpdateAllocHealth("default", ("a1", "a2"), (), T0 + 3)
    assert d.update is not None and d.update.groups[0].healthy_allocs == 2
    assert d.evaluation is not None and d.follow_up is None
    assert d.revert is None


def test_set_alloc_health_unhealthy_fails_and_reverts() -> None:
    w = watcher({"web": G(total=3, auto_revert=True)}, [alloc("a1"), alloc("a2")])
    d = w.set_alloc_health(["a1"], ["a2"], T0)
    assert d.update is not None and d.update.status == FAILED
    assert d.revert is not None and d.revert.to_version == 1
    assert d.alloc_health is not None and d.alloc_health.unhealthy_ids == ("a2",)
    assert d.evaluation is not None

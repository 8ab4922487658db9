"""Nomad's shouldFailEarly (drover.deployments.core.fail_early) in the watcher:
an unhealthy allocation fails its deployment at once only with no progress
deadline or a spent reschedule policy; otherwise the replacement and the
progress deadline decide."""

from __future__ import annotations

from deployments_builders import FAILED, T0, G, alloc, deployment, job

from drover.api.types.v1 import allocation_pb2
from drover.deployments.core.fail_early import should_fail_early, unhealthy
from drover.deployments.core.watcher import DeploymentWatcher
from drover.worker import reschedule

CLIENT_FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
LIMITED = (1, False)  # one attempt (interval: the policy's own, merged default)


def failed(alloc_id: str = "a") -> allocation_pb2.Allocation:
    return alloc(alloc_id, healthy=False, client_status=CLIENT_FAILED)


def watcher(g: G, allocs: list[allocation_pb2.Allocation]) -> DeploymentWatcher:
    groups = {"web": g}
    return DeploymentWatcher(deployment(groups=groups), [job(2, groups=groups)], allocs)


def test_reschedulable_unhealthy_alloc_does_not_fail_the_deployment() -> None:
    w = watcher(G(total=2, reschedule=None), [failed()])  # service default: unlimited
    decision = w.reconcile(T0)
    assert w.active and decision.revert is None
    assert w.deployment.task_groups["web"].unhealthy_allocs == 1  # still counted


def test_no_progress_deadline_fails_on_the_first_unhealthy() -> None:
    w = watcher(G(total=2, reschedule=None, progress_deadline=0), [failed()])
    w.reconcile(T0)
    assert w.deployment.status == FAILED
    assert w.deployment.status_description == "Failed due to unhealthy allocations"


def test_spent_policy_fails_at_once() -> None:
    spent = failed()
    spent.reschedule_tracker.CopyFrom(reschedule.tracker_proto(
        [reschedule.Event(T0 - 60, "x", "n", 30.0)]))
    g = G(total=2, reschedule=LIMITED)
    job_ = job(2, groups={"web": g})
    job_.task_groups[0].reschedule.interval.FromSeconds(3600)
    w = DeploymentWatcher(deployment(groups={"web": g}), [job_], [spent])
    w.reconcile(T0)
    assert w.deployment.status == FAILED


def test_first_failure_of_a_limited_policy_is_replaced_not_failed() -> None:
    g = G(total=2, reschedule=LIMITED)
    job_ = job(2, groups={"web": g})
    job_.task_groups[0].reschedule.interval.FromSeconds(3600)
    w = DeploymentWatcher(deployment(groups={"web": g}), [job_], [failed()])
    w.reconcile(T0)
    assert w.active


def test_the_replacement_failing_again_with_the_policy_spent_fails_it() -> None:
    g = G(total=1, reschedule=LIMITED)
    job_ = job(2, groups={"web": g})
    job_.task_groups[0].reschedule.interval.FromSeconds(3600)
    first = failed("a")
    first.desired_status = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    first.next_allocation = "b"
    second = failed("b")
    second.previous_allocation = "a"
    second.reschedule_tracker.CopyFrom(reschedule.tracker_proto(
        [reschedule.Event(T0 - 10, "a", "n", 5.0)]))
    w = DeploymentWatcher(deployment(groups={"web": g}), [job_], [first])
    w.reconcile(T0)
    assert w.active
    w.on_alloc(second, T0)
    assert w.deployment.status == FAILED


def test_unhealthy_counts_failed_unreplaced_and_live_unhealthy_only() -> None:
    live_bad = alloc("live", healthy=False)
    replaced = failed("old")
    new = alloc("new", healthy=None)
    new.previous_allocation = "old"
    stopped = failed("stopped")
    stopped.desired_status = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    healthy = alloc("ok", healthy=True)
    assert [a.id for a in unhealthy([live_bad, replaced, new, stopped, healthy])] == ["live"]


def test_healthy_alloc_never_fails_early() -> None:
    g = deployment().task_groups["web"]
    g.progress_deadline.Clear()
    assert not should_fail_early(alloc("a", healthy=True), g, job(), True, T0)
    assert should_fail_early(alloc("a", healthy=False), g, job(), True, T0)

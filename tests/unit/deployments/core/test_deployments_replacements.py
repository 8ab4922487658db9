"""Unhealthy allocations the watcher asks the scheduler to replace
(drover.deployments.core.replacements, Nomad's allowReplacements), and the
scenario with the worker's planner: a rollout whose allocations never turn
healthy is marked, but the planner keeps the running allocation (Nomad's
reconciler: a running allocation is untainted), so the progress deadline
fails the deployment."""

from __future__ import annotations

import itertools
import random

from deployments_builders import FAILED, RUNNING, T0, G, alloc, deployment, eval_ids, job

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2, node_pb2
from drover.deployments.config import BatcherConfig
from drover.deployments.core.effects import Decision
from drover.deployments.core.manager import WatcherManager
from drover.deployments.core.requests import build_request
from drover.deployments.core.watcher import DeploymentWatcher
from drover.worker.plan import Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import fill_defaults

STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
CLIENT_FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
LIMITED = (2, False)  # two attempts in the interval (set to 1 h below)


def limited_job(g: G) -> job_pb2.Job:
    out = job(2, groups={"web": g})
    if g.reschedule is not None and not g.reschedule[1]:
        out.task_groups[0].reschedule.interval.FromSeconds(3600)
    return out


def watcher(g: G, allocs: list[allocation_pb2.Allocation]) -> DeploymentWatcher:
    return DeploymentWatcher(deployment(groups={"web": g}), [limited_job(g)], allocs)


def test_running_unhealthy_alloc_is_marked_once_with_an_evaluation() -> None:
    w = watcher(G(total=2, reschedule=LIMITED), [alloc("a", healthy=False), alloc("b")])
    d = w.reconcile(T0)
    assert w.active
    assert d.reschedule is not None and d.reschedule.alloc_ids == ("a",)
    ev = d.reschedule.evaluation
    assert ev.deployment_id == "d1" and ev.job_id == "shop"
    assert ev.triggered_by == "deployment-watcher" and ev.type == "service"
    assert w.reconcile(T0 + 1).reschedule is None  # once
    # The stored flag coming back does not mark it again either.
    echoed = alloc("a", healthy=False, modify_index=2)
    echoed.desired_transition.reschedule = True
    assert w.on_alloc(echoed, T0 + 2).reschedule is None


def test_healthy_unknown_and_failed_allocs_are_not_marked() -> None:
    """A failed one gets its alloc-failure evaluation from the client's
    report; unknown health is not unhealthy."""
    allocs = [alloc("a", healthy=True), alloc("b"),
              alloc("c", healthy=False, client_status=CLIENT_FAILED)]
    assert watcher(G(total=3, reschedule=LIMITED), allocs).reconcile(T0).reschedule is None


def test_spent_policy_fails_early_instead_of_marking() -> None:
    w = watcher(G(total=1, reschedule=(0, False)), [alloc("a", healthy=False)])
    d = w.reconcile(T0)
    assert w.deployment.status == FAILED and d.reschedule is None


def test_no_progress_deadline_fails_instead_of_marking() -> None:
    w = watcher(G(total=1, reschedule=None, progress_deadline=0), [alloc("a", healthy=False)])
    d = w.reconcile(T0)
    assert w.deployment.status == FAILED and d.reschedule is None


def test_paused_deployment_marks_too() -> None:
    g = G(total=1, reschedule=None)
    paused = deployment(groups={"web": g}, status=deployment_pb2.DEPLOYMENT_STATUS_PAUSED)
    w = DeploymentWatcher(paused, [limited_job(g)], [alloc("a", healthy=False)])
    d = w.reconcile(T0)
    assert d.reschedule is not None and d.reschedule.alloc_ids == ("a",)


def test_manager_keeps_the_marks_with_their_decision() -> None:
    g = G(total=1, reschedule=None)
    m = WatcherManager(lambda: T0, BatcherConfig(), new_id=eval_ids())
    d = m.track(deployment(groups={"web": g}), [limited_job(g)], [alloc("a", healthy=False)])
    assert d.reschedule is not None and not d.empty
    assert m.stats().evaluations_created >= 1


# -- with the planner ---------------------------------------------------------

def _nodes() -> list[node_pb2.Node]:
    return [node_pb2.Node(id=f"n{i}", status=node_pb2.NODE_STATUS_READY,
                          resources=job_pb2.Resources(cpu=4000, memory_mb=8000))
            for i in range(3)]


def _roll(g: G, rounds: int) -> tuple[DeploymentWatcher, list[allocation_pb2.Allocation], int]:
    """Drive a count-1 rollout whose allocations never turn healthy: client
    reports unhealthy, the watcher marks, the planner replaces; returns the
    watcher, every allocation, and how many replacements were placed."""
    spec = limited_job(g)
    planned = job_pb2.Job()
    planned.CopyFrom(spec)
    fill_defaults(planned)
    dep = deployment(groups={"web": g})
    first = alloc("a0", healthy=False)
    first.job_version, first.name, first.node_id = 2, "shop.web[0]", "n0"
    allocs = {first.id: first}
    w = DeploymentWatcher(dep, [spec], list(allocs.values()))
    ids = (f"a{i}" for i in itertools.count(1))
    replaced = 0
    now = T0
    decisions: list[Decision] = [w.reconcile(now)]
    for _ in range(rounds):
        marks = [d.reschedule for d in decisions if d.reschedule is not None]
        if not w.active or not marks:
            break
        assert len(marks) == 1  # marked once
        for alloc_id in marks[0].alloc_ids:
            allocs[alloc_id].desired_transition.reschedule = True
        snap = Snapshot("default", "shop", planned, {2: planned}, w.deployment,
                        list(allocs.values()), _nodes(), {}, eval_id=marks[0].evaluation.id,
                        now=now)
        plan = compute_plan(snap, rng=random.Random(0), new_id=lambda: next(ids))
        decisions = []
        for a in [*plan.updates, *plan.placements]:
            allocs[a.id] = a
            decisions.append(w.on_alloc(a, now))
        replaced += len(plan.placements)
        now += 30
        for a in plan.placements:  # runs, never healthy by healthy_deadline
            a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
            a.deployment_status.healthy = False
            decisions.append(w.on_alloc(a, now))
    return w, list(allocs.values()), replaced


def test_never_healthy_rollout_is_not_replaced_and_fails_by_its_progress_deadline() -> None:
    """Nomad: the watcher marks the unhealthy allocation (allowReplacements),
    the reconciler's filterByRescheduleable/shouldFilter keep it (running:
    untainted), and the progress deadline fails the deployment. Was: the
    planner replaced it while the policy had attempts."""
    for policy in (LIMITED, None):
        w, allocs, replaced = _roll(G(total=1, reschedule=policy, progress_deadline=600), 6)
        assert replaced == 0 and w.deployment.status == RUNNING, policy
        assert len(allocs) == 1 and allocs[0].desired_status != STOP
        assert w.check_deadline(T0 + 599).empty
        d = w.check_deadline(T0 + 601)
        assert d.update is not None and d.update.status == FAILED, policy
        assert "progress deadline" in d.update.description, d


def test_marks_go_with_the_deployment_write_order() -> None:
    """The deployment's own request carries no marks (they go in
    UpdateAllocDesiredTransition, after it)."""
    w = watcher(G(total=1, reschedule=None), [alloc("a", healthy=False)])
    d = w.reconcile(T0)
    req = build_request(deployment(groups={"web": G(total=1, reschedule=None)}), d, T0)
    assert not req.allocation_updates

"""The planner keeps running allocations the deployment watcher marked to
reschedule (Nomad's reconciler: ``filterByRescheduleable``/``shouldFilter``
keep a running allocation untainted; only failed or lost ones are
rescheduled), the node-reschedule penalty (drover.worker.penalty) and a
reschedule that fits nowhere (blocked evaluation with its need)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
)
from drover.worker import penalty, reschedule
from drover.worker.blocked import blocked_need
from drover.worker.plan import Plan, Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import Vec, fill_defaults

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
NOW = 1_800_000_000.0


def _secs(s: float) -> Duration:
    d = Duration()
    d.FromNanoseconds(int(s * 1e9))
    return d


def job(count: int = 3, attempts: int | None = None) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="g", count=count, tasks=[job_pb2.Task(name="t", driver="sim")])
    tg.update.CopyFrom(job_pb2.UpdateStrategy(max_parallel=1))
    if attempts is not None:
        tg.reschedule.CopyFrom(job_pb2.ReschedulePolicy(
            attempts=attempts, interval=_secs(3600), unlimited=False,
            delay=_secs(5), delay_function="constant"))
    j = job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE, priority=50,
                    version=1, task_groups=[tg], datacenters=["dc1"])
    fill_defaults(j)
    return j


def deployment(status: deployment_pb2.DeploymentStatus = deployment_pb2.DEPLOYMENT_STATUS_RUNNING,
               ) -> deployment_pb2.Deployment:
    return deployment_pb2.Deployment(
        id="d1", namespace="default", job_id="web", job_version=1, status=status,
        task_groups={"g": deployment_pb2.DeploymentGroupState(desired_total=3)})


def alloc(i: int, node: str = "n0", *, marked: bool = False, healthy: bool | None = True,
          tracker_nodes: Sequence[str] = (),
          status: allocation_pb2.AllocClientStatus = RUNNING) -> allocation_pb2.Allocation:
    a = allocation_pb2.Allocation(
        id=f"a{i}", namespace="default", job_id="web", job_version=1, task_group="g",
        name=f"web.g[{i}]", node_id=node, deployment_id="d1", desired_status=RUN,
        client_status=status, resources=job_pb2.Resources(cpu=100, memory_mb=300))
    if healthy is not None:
        a.deployment_status.healthy = healthy
    if marked:
        a.desired_transition.reschedule = True
    for k, n in enumerate(tracker_nodes):
        a.reschedule_tracker.events.append(allocation_pb2.RescheduleEvent(
            reschedule_time=reschedule.timestamp(NOW - 100 + k), prev_alloc_id=f"old{k}",
            prev_node_id=n, delay=_secs(5)))
    return a


def _failed(i: int, node: str, tracker_nodes: Sequence[str] = ()) -> allocation_pb2.Allocation:
    a = alloc(i, node, status=FAILED, healthy=None, tracker_nodes=tracker_nodes)
    a.finished_at.CopyFrom(reschedule.timestamp(NOW - 60))
    return a


def nodes(n: int = 3, cpu: int = 4000) -> list[node_pb2.Node]:
    return [node_pb2.Node(id=f"n{i}", datacenter="dc1", status=node_pb2.NODE_STATUS_READY,
                          resources=job_pb2.Resources(cpu=cpu, memory_mb=8000))
            for i in range(n)]


def ids() -> Callable[[], str]:
    c = itertools.count()
    return lambda: f"new-{next(c)}"


def snap_for(j: job_pb2.Job, allocs: list[allocation_pb2.Allocation],
             dep: deployment_pb2.Deployment | None, ns: list[node_pb2.Node] | None = None,
             used: dict[str, Vec] | None = None) -> Snapshot:
    return Snapshot("default", "web", j, {j.version: j}, dep, allocs,
                    ns if ns is not None else nodes(), used or {}, eval_id="e1", now=NOW)


def plan_for(j: job_pb2.Job, allocs: list[allocation_pb2.Allocation],
             dep: deployment_pb2.Deployment | None = None, seed: int = 0,
             ns: list[node_pb2.Node] | None = None, used: dict[str, Vec] | None = None) -> Plan:
    dep = dep if dep is not None else deployment()
    return compute_plan(snap_for(j, allocs, dep, ns, used), rng=random.Random(seed),
                        new_id=ids())


# -- the marked allocation ------------------------------------------------------

def test_marked_unhealthy_running_is_kept_whatever_its_policy() -> None:
    """Nomad's ``shouldFilter``: a running allocation is untainted, marked or
    not, attempts left or spent, deployment running or failed: the planner
    leaves it running and the progress deadline decides the deployment.
    Was: stopped and replaced at once ("alloc was rescheduled because it
    failed")."""
    for tracker in ((), ("n1",), ("n1", "n2")):
        for dep in (deployment(), deployment(deployment_pb2.DEPLOYMENT_STATUS_FAILED)):
            allocs = [alloc(0), alloc(1, "n1"),
                      alloc(2, "n2", marked=True, healthy=False, tracker_nodes=tracker)]
            assert plan_for(job(attempts=2), allocs, dep=dep).empty


def test_unmarked_unhealthy_is_left_to_the_watcher() -> None:
    j = job(attempts=2)
    plan = plan_for(j, [alloc(0), alloc(1), alloc(2, healthy=False)])
    assert plan.empty


def test_a_marked_unhealthy_one_counts_against_max_parallel() -> None:
    """It is in flight (of this deployment, not healthy): no old allocation
    is updated beside it (max_parallel 1)."""
    j = job(attempts=2)
    old = alloc(1, "n1")
    old.job_version = 0
    v0 = job_pb2.Job()
    v0.CopyFrom(j)
    v0.version = 0
    v0.task_groups[0].tasks[0].config["image"] = "v0"  # a destructive update
    allocs = [alloc(0, healthy=True), old, alloc(2, "n2", marked=True, healthy=False)]
    snap = Snapshot("default", "web", j, {0: v0, 1: j}, deployment(), allocs, nodes(), {},
                    eval_id="e1", now=NOW)
    plan = compute_plan(snap, rng=random.Random(0), new_id=ids())
    assert plan.empty


# -- node-reschedule penalty ------------------------------------------------------

def test_penalty_nodes_rule() -> None:
    failed = alloc(0, "n0", status=FAILED, tracker_nodes=["n1", ""])
    assert penalty.penalty_nodes(failed) == {"n0", "n1"}
    assert penalty.penalty_nodes(alloc(1, "n2", marked=True)) == frozenset()  # running: kept
    # A healthy running one being updated: only its tracker's nodes.
    assert penalty.penalty_nodes(alloc(2, "n2", tracker_nodes=["n1"])) == {"n1"}


def test_replacement_avoids_the_previous_nodes_whatever_the_shuffle() -> None:
    """Best fit would prefer the fuller previous nodes; the penalty wins, on
    every shuffle, while another node fits -- also when the two penalty nodes
    come first and the search looks at only two (``MAX_SKIP``)."""
    j = job(count=1, attempts=3)
    ns = nodes(3)
    # n0 and n1 are fuller (best fit prefers them) and are the penalty nodes.
    used = {"n0": Vec(cpu=3000, memory_mb=6000), "n1": Vec(cpu=3000, memory_mb=6000)}
    for seed in range(20):
        a = _failed(0, "n0", tracker_nodes=["n1"])
        plan = plan_for(j, [a], dep=deployment(deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL),
                        seed=seed, ns=ns, used=used)
        (new,) = plan.placements
        assert new.node_id not in ("n0", "n1"), seed


def test_failed_replacement_avoids_its_node() -> None:
    j = job(count=1, attempts=3)
    ns = nodes(4)
    used = {"n0": Vec(cpu=3500, memory_mb=7000)}
    for seed in range(20):
        a = alloc(0, "n0", status=FAILED, healthy=None)
        a.finished_at.CopyFrom(reschedule.timestamp(NOW - 60))
        plan = plan_for(j, [a], dep=deployment(deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL),
                        seed=seed, ns=ns, used=used)
        (new,) = plan.placements
        assert new.previous_allocation == "a0" and new.node_id != "n0", seed


def test_penalty_node_is_used_when_nothing_else_fits() -> None:
    j = job(count=1, attempts=3)
    ns = nodes(2)
    used = {"n1": Vec(cpu=4000, memory_mb=8000)}  # n1 full: only n0, the penalty node, fits
    a = _failed(0, "n0")
    plan = plan_for(j, [a], dep=deployment(deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL),
                    ns=ns, used=used)
    (new,) = plan.placements
    assert new.node_id == "n0"


# -- a reschedule that fits nowhere ---------------------------------------------

def test_failed_with_no_room_stays_failed_and_queues() -> None:
    j = job(count=1, attempts=3)
    ns = nodes(1, cpu=100)
    a = alloc(0, "n0", status=FAILED, healthy=None)
    a.finished_at.CopyFrom(reschedule.timestamp(NOW - 60))
    snap = snap_for(j, [a], deployment(deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL), ns,
                    {"n0": Vec(cpu=100, memory_mb=300)})
    plan = compute_plan(snap, rng=random.Random(0), new_id=ids())
    assert not plan.placements and not plan.updates
    assert plan.queued == {"g": 1}
    ev = evaluation_pb2.Evaluation(status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)
    blocked_need(ev, snap, plan, 42)
    assert ev.snapshot_index == 42 and list(ev.blocked_datacenters) == ["dc1"]
    ask = j.task_groups[0].tasks[0].resources
    assert ev.blocked_ask.cpu == ask.cpu and ev.blocked_ask.memory_mb == ask.memory_mb

"""The worker's pure placement core: Nomad's generic-scheduler rules."""

from __future__ import annotations

import itertools

import pytest

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2, node_pb2
from drover.worker.plan import Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import Vec, fill_defaults

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP


def job(version: int = 0, count: int = 3, canary: int = 0, max_parallel: int = 1,
        image: str = "v1", meta: str = "") -> job_pb2.Job:
    j = job_pb2.Job(id="web", namespace="default", version=version,
                    type=job_pb2.JOB_TYPE_SERVICE, task_groups=[job_pb2.TaskGroup(
                        name="g", count=count,
                        update=job_pb2.UpdateStrategy(max_parallel=max_parallel, canary=canary),
                        tasks=[job_pb2.Task(name="t", driver="sim", config={"image": image})])])
    if meta:
        j.meta["note"] = meta
    fill_defaults(j)
    return j


def nodes(n: int, cpu: int = 1000, mem: int = 4000) -> list[node_pb2.Node]:
    return [node_pb2.Node(id=f"n{i}", status=node_pb2.NODE_STATUS_READY,
                          resources=job_pb2.Resources(cpu=cpu, memory_mb=mem))
            for i in range(n)]


def deployment(version: int, canaries: int = 0, promoted: bool = False,
               status: deployment_pb2.DeploymentStatus = deployment_pb2.DEPLOYMENT_STATUS_RUNNING,
               ) -> deployment_pb2.Deployment:
    d = deployment_pb2.Deployment(id=f"d{version}", job_id="web", job_version=version,
                                  status=status)
    d.task_groups["g"].desired_canaries = canaries
    d.task_groups["g"].desired_total = 3
    d.task_groups["g"].promoted = promoted
    return d


def running(j: job_pb2.Job, n: int, node: str = "n0", healthy: bool | None = True,
            dep: str = "", start: int = 0) -> list[allocation_pb2.Allocation]:
    out = []
    for i in range(start, start + n):
        a = allocation_pb2.Allocation(
            id=f"v{j.version}-{i}", namespace="default", job_id="web", job_version=j.version,
            task_group="g", name=f"web.g[{i}]", node_id=node, desired_status=RUN,
            client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, deployment_id=dep,
            resources=job_pb2.Resources(cpu=100, memory_mb=300))
        if healthy is not None:
            a.deployment_status.healthy = healthy
        out.append(a)
    return out


def snap(j: job_pb2.Job | None, allocs=(), ns=None, dep=None, versions=()) -> Snapshot:
    ns = ns if ns is not None else nodes(3)
    used: dict[str, Vec] = {}
    for a in allocs:
        used[a.node_id] = used.get(a.node_id, Vec()) + Vec.of(a.resources)
    vs = {v.version: v for v in versions}
    if j is not None:
        vs[j.version] = j
    return Snapshot("default", "web", j, vs, dep, list(allocs), ns, used, eval_id="e1")


def ids():
    c = itertools.count()
    return lambda: f"new-{next(c)}"


def test_first_version_places_everything_spread_by_binpacking() -> None:
    plan = compute_plan(snap(job(count=3), dep=deployment(0)), new_id=ids())
    assert len(plan.placements) == 3 and not plan.updates and not plan.queued
    assert sorted(a.name for a in plan.placements) == ["web.g[0]", "web.g[1]", "web.g[2]"]
    assert {a.deployment_id for a in plan.placements} == {"d0"}
    assert all(a.resources.cpu == 100 and a.resources.memory_mb == 300 for a in plan.placements)
    # the anti-affinity penalty spreads one group over the three nodes
    assert len({a.node_id for a in plan.placements}) == 3


def test_unchanged_job_changes_nothing() -> None:
    j = job()
    plan = compute_plan(snap(j, running(j, 3), dep=deployment(0)))
    assert plan.empty and not plan.queued


def test_canaries_first_then_rolling_after_promotion() -> None:
    v0, v1 = job(0), job(1, canary=1, image="v2")
    old = running(v0, 3)
    plan = compute_plan(snap(v1, old, dep=deployment(1, canaries=1), versions=[v0]),
                        new_id=ids())
    assert len(plan.placements) == 1 and plan.placements[0].deployment_status.canary
    assert not plan.updates  # nothing old stops before promotion
    canary = plan.placements[0]
    canary.deployment_status.healthy = True
    canary.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
    # promoted: one surplus old stopped, then one destructive update (max_parallel 1)
    plan = compute_plan(snap(v1, [*old, canary], dep=deployment(1, 1, promoted=True),
                             versions=[v0]), new_id=ids())
    stops = [a for a in plan.updates if a.desired_status == STOP]
    assert len(stops) == 2 and len(plan.placements) == 1
    assert plan.placements[0].previous_allocation in {a.id for a in stops}


def test_max_parallel_counts_unhealthy_in_flight() -> None:
    v0, v1 = job(0), job(1, image="v2", max_parallel=2)
    old = running(v0, 3)
    fresh = running(v1, 1, healthy=None, dep="d1", start=0)
    old = [a for a in old if a.name != "web.g[0]"]
    plan = compute_plan(snap(v1, [*old, *fresh], dep=deployment(1), versions=[v0]), new_id=ids())
    assert len(plan.placements) == 1  # 2 in parallel, 1 still unhealthy
    paused = deployment(1, status=deployment_pb2.DEPLOYMENT_STATUS_PAUSED)
    assert compute_plan(snap(v1, [*old, *fresh], dep=paused, versions=[v0])).empty


def test_in_place_update_when_tasks_unchanged() -> None:
    v0, v1 = job(0), job(1, meta="only the job's meta changed")
    plan = compute_plan(snap(v1, running(v0, 3), dep=deployment(1), versions=[v0]))
    assert not plan.placements and len(plan.updates) == 3
    assert all(a.job_version == 1 and a.desired_status == RUN and a.deployment_id == "d1"
               and not a.deployment_status.HasField("healthy") for a in plan.updates)


def test_a_scale_down_with_an_in_place_update_writes_each_allocation_once() -> None:
    # A scale (a new version, same tasks) from 5 to 3: the two highest
    # indexes stop, the other three are updated in place; none is both (a
    # txn naming a key twice is refused by etcd: the soak's plans were).
    v0, v1 = job(0, count=5), job(1, count=3)
    plan = compute_plan(snap(v1, running(v0, 5), dep=deployment(1), versions=[v0]))
    assert len({a.id for a in plan.updates}) == len(plan.updates) == 5
    assert sorted(a.name for a in plan.updates if a.desired_status == STOP) == [
        "web.g[3]", "web.g[4]"]
    assert all(a.job_version == 1 for a in plan.updates if a.desired_status == RUN)


def test_old_allocations_are_compared_with_the_group_once_per_version(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.worker import generic

    compared: list[int] = []
    real = generic.tasks_equal

    def counting(a: job_pb2.TaskGroup | None, b: job_pb2.TaskGroup) -> bool:
        compared.append(1)
        return real(a, b)

    monkeypatch.setattr(generic, "tasks_equal", counting)
    v0, v1, v2 = job(0, count=8), job(1, count=8, image="v2"), job(2, count=8, image="v3")
    allocs = running(v0, 4) + running(v1, 4, start=4)
    plan = compute_plan(snap(v2, allocs, dep=deployment(2), versions=[v0, v1]))
    assert len(compared) == 2  # versions 0 and 1, not each of the 8 allocations
    assert plan.updates and all(a.desired_status == STOP for a in plan.updates)


def test_lost_allocations_are_replaced_elsewhere() -> None:
    j = job()
    allocs = running(j, 3, node="n0")
    allocs[0].client_status = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
    ns = nodes(3)
    plan = compute_plan(snap(j, allocs, ns=ns), new_id=ids())
    assert [a.id for a in plan.updates] == [allocs[0].id]
    assert plan.updates[0].desired_status == STOP
    assert len(plan.placements) == 1 and plan.placements[0].name == "web.g[0]"


def test_an_allocation_whose_node_vanished_is_stopped_as_lost() -> None:
    """Nomad's reconciler: an allocation on a node that is gone (or down) is
    stopped with client status lost (``AppendStoppedAlloc``), not left
    reading running, and replaced on a node that is there."""
    j = job()
    allocs = running(j, 3, node="gone")
    plan = compute_plan(snap(j, allocs, ns=nodes(3)), new_id=ids())
    assert sorted(a.id for a in plan.updates) == sorted(a.id for a in allocs)
    assert {(a.desired_status, a.client_status) for a in plan.updates} == {
        (STOP, allocation_pb2.ALLOC_CLIENT_STATUS_LOST)}
    assert {a.desired_description for a in plan.updates} == {"alloc is lost since its node is down"}
    assert len(plan.placements) == 3 and all(a.node_id != "gone" for a in plan.placements)


def test_a_lost_allocations_name_is_not_handed_out_twice() -> None:
    """Count 3 with only web.g[1] running and web.g[0] lost (web.g[2] never
    placed): the replacement takes g[0] and the missing one g[2], not g[0]
    again (Nomad's name index: a name taken is taken)."""
    j = job(count=3)
    allocs = running(j, 1, start=1) + running(j, 1, node="gone")
    plan = compute_plan(snap(j, allocs, ns=nodes(3)), new_id=ids())
    assert [a.name for a in plan.updates] == ["web.g[0]"]
    assert sorted(a.name for a in plan.placements) == ["web.g[0]", "web.g[2]"]


def test_nothing_fits_is_queued() -> None:
    j = job(count=3)
    plan = compute_plan(snap(j, ns=nodes(1, cpu=250)), new_id=ids())
    assert len(plan.placements) == 2 and plan.queued == {"g": 1}
    assert compute_plan(snap(j, ns=[])).queued == {"g": 3}


def test_stopped_job_stops_everything_and_caps_ops() -> None:
    j = job(count=3)
    j.stop = True
    plan = compute_plan(snap(j, running(j, 3)))
    assert len(plan.updates) == 3 and all(a.desired_status == STOP for a in plan.updates)
    big = job(count=10)
    plan = compute_plan(snap(big, ns=nodes(10)), new_id=ids(), max_ops=6)
    # Each placement may bring its node's usage record: the cap counts both.
    assert plan.objects() <= 6 and plan.more
    assert len(plan.placements) == 6 - len(plan.node_ids())


def test_canaries_with_nothing_old_left_are_part_of_the_count() -> None:
    v1 = job(1, canary=1, image="v2")
    plan = compute_plan(snap(v1, dep=deployment(1, canaries=1), versions=[job(0)]), new_id=ids())
    assert len(plan.placements) == 3
    assert sum(a.deployment_status.canary for a in plan.placements) == 1


def test_canaries_reuse_the_indexes_being_replaced() -> None:
    """Nomad's ``NextCanaries``: a canary takes the index of an allocation
    being replaced (destructive update) that no canary holds yet, lowest
    first: web.g[0] of a count-3 group, not web.g[3] (was: the next free
    index). After promotion the old allocation sharing a canary's name is
    the one stopped (Nomad's ``computeStop``), and the rolling replacements
    keep the other names: no two live allocations share one."""
    v0 = job(0)
    old = running(v0, 3)
    for want, names in ((1, ["web.g[0]"]), (3, ["web.g[0]", "web.g[1]", "web.g[2]"])):
        v1 = job(1, canary=want, image="v2")
        plan = compute_plan(snap(v1, old, dep=deployment(1, canaries=want), versions=[v0]),
                            new_id=ids())
        assert sorted(a.name for a in plan.placements) == names
        assert all(a.deployment_status.canary for a in plan.placements)
    v1 = job(1, canary=1, image="v2")
    (canary,) = compute_plan(snap(v1, old, dep=deployment(1, canaries=1), versions=[v0]),
                             new_id=ids()).placements
    # a second canary (the first still there) takes the next index being replaced
    two = deployment(1, canaries=2)
    plan = compute_plan(snap(job(1, canary=2, image="v2"), [*old, canary], dep=two,
                             versions=[v0]), new_id=ids())
    assert [a.name for a in plan.placements] == ["web.g[1]"]
    canary.deployment_status.healthy = True
    plan = compute_plan(snap(v1, [*old, canary], dep=deployment(1, 1, promoted=True),
                             versions=[v0]), new_id=ids())
    stopped = {a.id for a in plan.updates if a.desired_status == STOP}
    assert "v0-0" in stopped  # shares web.g[0] with the canary
    live = [a for a in [*old, canary, *plan.placements] if a.id not in stopped]
    names = [a.name for a in live]
    assert len(names) == len(set(names)), names

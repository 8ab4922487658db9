"""drover.worker.system: one allocation per eligible node (Nomad's system scheduler)."""

from __future__ import annotations

from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.worker.plan import Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import Vec, fill_defaults

RUN, STOP = allocation_pb2.ALLOC_DESIRED_STATUS_RUN, allocation_pb2.ALLOC_DESIRED_STATUS_STOP


def _job(version: int = 0, image: str = "v1", dcs: tuple[str, ...] = ("dc1",),
         max_parallel: int = 1) -> job_pb2.Job:
    j = job_pb2.Job(id="agent", namespace="default", version=version,
                    type=job_pb2.JOB_TYPE_SYSTEM, datacenters=list(dcs))
    tg = j.task_groups.add(name="g", count=1)
    tg.update.max_parallel = max_parallel
    tg.tasks.add(name="t", driver="sim", config={"image": image})
    fill_defaults(j)
    return j


def _node(nid: str, dc: str = "dc1", **kw: object) -> node_pb2.Node:
    kw.setdefault("status", node_pb2.NODE_STATUS_READY)
    return node_pb2.Node(id=nid, datacenter=dc,
                         resources=job_pb2.Resources(cpu=1000, memory_mb=4000),
                         **kw)  # type: ignore[arg-type]


def _alloc(node: str, version: int = 0, aid: str = "") -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(
        id=aid or f"{node}-v{version}", namespace="default", job_id="agent",
        job_version=version, task_group="g", name="agent.g[0]", node_id=node,
        desired_status=RUN, client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
        resources=job_pb2.Resources(cpu=100, memory_mb=300))


def _snap(j: job_pb2.Job, nodes: list[node_pb2.Node], allocs: list[allocation_pb2.Allocation],
          versions: tuple[job_pb2.Job, ...] = ()) -> Snapshot:
    used: dict[str, Vec] = {}
    for a in allocs:
        used[a.node_id] = used.get(a.node_id, Vec()) + Vec.of(a.resources)
    return Snapshot(namespace="default", job_id="agent", job=j,
                    versions={v.version: v for v in (*versions, j)}, deployment=None,
                    allocs=allocs, nodes=nodes, node_used=used)


def test_one_allocation_per_eligible_node_of_the_jobs_datacenters() -> None:
    nodes = [_node("a"), _node("b"), _node("c", dc="dc2"),
             _node("d", drain=True), _node("e", status=node_pb2.NODE_STATUS_DOWN)]
    plan = compute_plan(_snap(_job(), nodes, []))
    assert sorted(a.node_id for a in plan.placements) == ["a", "b"]
    assert not plan.updates


def test_a_node_that_already_runs_it_gets_nothing_new() -> None:
    plan = compute_plan(_snap(_job(), [_node("a"), _node("b")], [_alloc("a")]))
    assert [a.node_id for a in plan.placements] == ["b"]


def test_allocations_on_nodes_out_of_the_datacenters_are_stopped_on_draining_ones_kept() -> None:
    nodes = [_node("a", dc="dc2"), _node("b", drain=True)]
    plan = compute_plan(_snap(_job(), nodes, [_alloc("a"), _alloc("b")]))
    assert [(a.node_id, a.desired_status) for a in plan.updates] == [("a", STOP)]
    assert not plan.placements


def test_a_new_version_replaces_max_parallel_nodes_at_a_time() -> None:
    old = _job(0)
    new = _job(1, image="v2")
    nodes = [_node("a"), _node("b"), _node("c")]
    plan = compute_plan(_snap(new, nodes, [_alloc(n.id) for n in nodes], versions=(old,)))
    assert len(plan.placements) == 1 and plan.more
    (p,) = plan.placements
    assert p.previous_allocation == f"{p.node_id}-v0" and p.job_version == 1


def test_an_unchanged_task_is_updated_in_place() -> None:
    old = _job(0)
    new = _job(1)
    new.meta["note"] = "job-level only"
    plan = compute_plan(_snap(new, [_node("a")], [_alloc("a")], versions=(old,)))
    assert not plan.placements
    assert [(u.node_id, u.job_version, u.desired_status) for u in plan.updates] == [("a", 1, RUN)]


def test_a_node_without_room_queues() -> None:
    small = _node("a")
    small.resources.cpu = 50
    plan = compute_plan(_snap(_job(), [small], []))
    assert plan.queued == {"g": 1} and not plan.placements


def test_the_drainers_mark_stops_it_on_the_draining_node_with_no_replacement() -> None:
    marked = _alloc("b")
    marked.desired_transition.migrate = True
    plan = compute_plan(_snap(_job(), [_node("a"), _node("b", drain=True)],
                              [_alloc("a"), marked]))
    assert [(a.node_id, a.desired_status, a.desired_description) for a in plan.updates] == [
        ("b", STOP, "alloc is being migrated")]
    assert not plan.placements


def test_a_replacement_with_no_room_left_in_the_plan_takes_back_nothing_else() -> None:
    # found by the TypeScript worker's parity test: the stop of a node's old
    # allocation did not fit the plan, and taking back "its" stop took the
    # plan's previous update (or failed on an empty plan)
    old, new = _job(0), _job(1, image="v2")
    nodes = [_node("a", dc="dc2"), _node("b")]
    plan = compute_plan(_snap(new, nodes, [_alloc("a"), _alloc("b")], versions=(old,)),
                        max_ops=2)
    assert [(a.node_id, a.desired_status) for a in plan.updates] == [("a", STOP)]
    assert not plan.placements and plan.more
    alone = compute_plan(_snap(new, [_node("b")], [_alloc("b")], versions=(old,)), max_ops=1)
    assert not alone.updates and not alone.placements and alone.more


def test_an_alloc_stop_is_replaced_on_its_node_and_linked() -> None:
    """Nomad's ``Alloc.Stop`` (``DesiredTransition.Migrate``) of a system
    allocation on an eligible node: stopped ("alloc is being migrated") and
    replaced on the same node, chained as Nomad's system scheduler chains a
    placement to the node's terminal allocation of that name
    (``PreviousAllocation``; the state store sets ``NextAllocation``). Was:
    stopped by the state service, the replacement unlinked."""
    marked = _alloc("a")
    marked.desired_transition.migrate = True
    plan = compute_plan(_snap(_job(), [_node("a"), _node("b")], [marked, _alloc("b")]))
    (old,) = plan.updates
    (new,) = plan.placements
    assert (old.id, old.desired_status, old.desired_description) == (
        "a-v0", STOP, "alloc is being migrated")
    assert new.node_id == "a" and new.previous_allocation == "a-v0"
    assert old.next_allocation == new.id


def test_a_drained_system_allocation_is_stopped_not_replaced() -> None:
    marked = _alloc("a")
    marked.desired_transition.migrate = True
    nodes = [_node("a", drain=True), _node("b")]
    plan = compute_plan(_snap(_job(), nodes, [marked, _alloc("b")]))
    assert [a.id for a in plan.updates] == ["a-v0"] and not plan.placements


def test_a_replacement_that_does_not_fit_keeps_the_old_ones_room_used() -> None:
    """The new version of group g asks more than node a holds: its old
    allocation keeps running, and keeps its room, so the job's new group h
    (which would fit only in that room) is queued, not placed over it."""
    old = _job(0)
    new = _job(1, image="v2")
    new.task_groups[0].tasks[0].resources.cpu = 1200  # more than the node has
    h = new.task_groups.add(name="h", count=1)
    h.tasks.add(name="t", driver="sim", config={"image": "v2"})
    fill_defaults(new)
    h.tasks[0].resources.cpu = 950  # fits only if g's 100 were free
    running = _alloc("a")
    plan = compute_plan(_snap(new, [_node("a")], [running], versions=(old,)))
    assert not plan.updates  # g's old allocation keeps running
    assert not plan.placements and plan.queued == {"g": 1, "h": 1}

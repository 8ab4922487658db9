"""Blocked evaluations (:mod:`drover.state.evaluations.core.unblock`): unblocked by every
capacity change (client-terminal allocations included), by what they need
(datacenter, resources), and at once when they missed an unblock."""

from __future__ import annotations

from collections.abc import Iterator

from state_core_data import context, ready_node, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.state.allocations.core import allocs
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder
from drover.state.evaluations.core import evals
from drover.state.evaluations.core.unblock import Room, unblock_where
from drover.state.nodes.core import nodes
from drover.worker.resources import Vec

BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED
PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING


def blocked(eid: str = "b1", job: str = "other", dcs: tuple[str, ...] = ("dc1",),
            cpu: int = 500, mem: int = 500, snapshot: int = 0) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(
        id=eid, namespace="default", type="service", job_id=job, status=BLOCKED,
        snapshot_index=snapshot, blocked_datacenters=dcs,
        blocked_ask=job_pb2.Resources(cpu=cpu, memory_mb=mem))


def node(nid: str = "n1", dc: str = "dc1") -> node_pb2.Node:
    n = ready_node(datacenter=dc)
    n.id = nid
    return n


def alloc(aid: str = "a1", node_id: str = "n1", cpu: int = 800) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=aid, namespace="default", job_id="web", node_id=node_id,
                                     desired_status=RUN, client_status=RUNNING,
                                     resources=job_pb2.Resources(cpu=cpu, memory_mb=800))


def statuses(plan: object) -> dict[str, int]:
    out = {}
    for op, ev in zip(plan.ops, plan.events, strict=True):  # type: ignore[attr-defined]
        if ev.kind == codec.EVALUATIONS:
            e = codec.decode(codec.EVALUATIONS, op.value, 1, 1)
            out[e.id] = e.status
    return out


def _report(status: int) -> list[state_pb2.AllocationUpdate]:
    return [state_pb2.AllocationUpdate(namespace="default", id="a1",
                                       client_status=status)]  # type: ignore[arg-type]


def test_a_client_reporting_an_allocation_complete_unblocks_what_now_fits() -> None:
    v = view([(codec.NODES, node(), 1, 1), (codec.ALLOCATIONS, alloc(), 2, 2),
              (codec.EVALUATIONS, blocked(), 3, 3)])
    plan = allocs.plan_update_allocs(v, context(),
                                     _report(allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE))
    assert statuses(plan) == {"b1": PENDING}
    # a report that frees nothing (still running) unblocks nothing
    v = view([(codec.NODES, node(), 1, 1), (codec.ALLOCATIONS, alloc(), 2, 2),
              (codec.EVALUATIONS, blocked(), 3, 3)])
    assert statuses(allocs.plan_update_allocs(v, context(), _report(RUNNING))) == {}


def test_failed_frees_room_too() -> None:
    v = view([(codec.NODES, node(), 1, 1), (codec.ALLOCATIONS, alloc(), 2, 2),
              (codec.EVALUATIONS, blocked(), 3, 3)])
    plan = allocs.plan_update_allocs(v, context(),
                                     _report(allocation_pb2.ALLOC_CLIENT_STATUS_FAILED))
    assert statuses(plan) == {"b1": PENDING}


def test_unblock_by_datacenter_and_resources_not_every_blocked_evaluation() -> None:
    fits = blocked("fits", job="a", cpu=500)
    too_big = blocked("big", job="b", cpu=5000)
    elsewhere = blocked("dc2", job="c", dcs=("dc2",))
    anywhere = blocked("star", job="d", dcs=("*",))
    v = view([(codec.NODES, node(), 1, 1), (codec.ALLOCATIONS, alloc(), 2, 2),
              (codec.EVALUATIONS, fits, 3, 3), (codec.EVALUATIONS, too_big, 4, 4),
              (codec.EVALUATIONS, elsewhere, 5, 5), (codec.EVALUATIONS, anywhere, 6, 6)])
    plan = allocs.plan_update_allocs(v, context(),
                                     _report(allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE))
    assert statuses(plan) == {"fits": PENDING, "star": PENDING}


def test_a_node_becoming_ready_unblocks_by_its_room() -> None:
    down = node()
    down.status = node_pb2.NODE_STATUS_DOWN
    v = view([(codec.NODES, down, 1, 1), (codec.EVALUATIONS, blocked("small"), 2, 2),
              (codec.EVALUATIONS, blocked("huge", job="h", cpu=99999), 3, 3)])
    plan = nodes.plan_node_status(v, context(), state_pb2.UpdateNodeStatusRequest(
        id="n1", status=node_pb2.NODE_STATUS_READY))
    assert statuses(plan) == {"small": PENDING} and plan.respond(9).unblocked == 1


def test_a_blocked_evaluation_that_missed_an_unblock_is_stored_pending() -> None:
    # The worker planned at index 5; the allocation stopped at index 7 (its
    # unblock found nothing blocked); the blocked evaluation arrives at 8.
    stopped = alloc()
    stopped.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
    v = view([(codec.NODES, node(), 1, 1), (codec.ALLOCATIONS, stopped, 2, 7)])
    ev = blocked(snapshot=5)
    plan = evals.plan_update(v, context(), [], [ev])
    assert statuses(plan) == {"b1": PENDING}
    assert "after its snapshot (index 5)" in ev.status_description


def test_no_missed_unblock_when_nothing_changed_since_or_it_still_does_not_fit() -> None:
    full = alloc(cpu=1000)
    v = view([(codec.NODES, node(), 1, 6), (codec.ALLOCATIONS, full, 2, 2)])
    assert statuses(evals.plan_update(v, context(), [], [blocked(snapshot=5)])) == {
        "b1": BLOCKED}  # the node changed since, but it is full
    stopped = alloc()
    stopped.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
    v = view([(codec.NODES, node(), 1, 1), (codec.ALLOCATIONS, stopped, 2, 4)])
    assert statuses(evals.plan_update(v, context(), [], [blocked(snapshot=5)])) == {
        "b1": BLOCKED}  # the change was already in its snapshot


def test_rooms_are_worked_out_only_when_an_evaluation_is_blocked() -> None:
    asked = []

    def rooms() -> Iterator[Room]:
        asked.append(True)
        yield Room(node(), Vec(cpu=4000, memory_mb=4000))

    ctx = context()
    none_blocked = view([(codec.NODES, node(), 1, 1)])
    assert unblock_where(none_blocked, ctx, PlanBuilder(ctx.keys, ctx.on_put), rooms(), 10) == 0
    assert not asked
    one = view([(codec.NODES, node(), 1, 1), (codec.EVALUATIONS, blocked(), 2, 2)])
    assert unblock_where(one, ctx, PlanBuilder(ctx.keys, ctx.on_put), rooms(), 10) == 1
    assert asked

"""The per-node rule (:mod:`drover.state.allocations.core.usage`): Nomad's evaluateNodePlan
reasons, the plan's own stops and updates swapped in by id, the record."""

from __future__ import annotations

from state_core_data import ready_node, view

from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.state.allocations.core import usage
from drover.state.core import codec
from drover.worker.resources import Vec

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP


def _a(aid: str, cpu: int = 100, mem: int = 100, *, desired: int = RUN,
       client: int = 0) -> allocation_pb2.Allocation:
    a = allocation_pb2.Allocation(id=aid, namespace="default", job_id="j", node_id="n1",
                                  desired_status=desired, client_status=client)  # type: ignore[arg-type]
    a.resources.cpu, a.resources.memory_mb = cpu, mem
    return a


def _part(placements: list[allocation_pb2.Allocation],
          updates: list[allocation_pb2.Allocation] = []) -> usage.NodePart:  # noqa: B006
    return usage.NodePart("n1", list(placements), list(updates))


def test_short_of_names_cpu_before_memory() -> None:
    assert usage.short_of(Vec(100, 100), Vec(100, 100)) is None
    assert usage.short_of(Vec(100, 100), Vec(101, 500)) == "cpu"
    assert usage.short_of(Vec(100, 100), Vec(50, 101)) == "memory"


def test_node_state_reasons() -> None:
    part = _part([_a("p")])
    assert usage.refusal(view([]), part) == "node does not exist"
    down = ready_node()
    down.status = node_pb2.NODE_STATUS_DOWN
    assert usage.refusal(view([(codec.NODES, down, 1, 1)]), part) == (
        "node is not ready for placements")
    inel = ready_node(scheduling_eligibility=node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE)
    assert usage.refusal(view([(codec.NODES, inel, 1, 1)]), part) == "node is not eligible"
    assert usage.refusal(view([(codec.NODES, ready_node(drain=True), 1, 1)]), part) == (
        "node is not eligible")
    # Only stops and in-place updates: fits whatever the node is.
    assert usage.refusal(view([]), _part([], [_a("x", desired=STOP)])) is None


def test_room_counts_live_allocations_only_and_swaps_the_plans_own() -> None:
    failed = _a("f", 900, client=allocation_pb2.ALLOC_CLIENT_STATUS_FAILED)
    stopped = _a("s", 900, desired=STOP)
    live = _a("l", 600)
    v = view([(codec.NODES, ready_node(), 1, 1), (codec.ALLOCATIONS, failed, 2, 2),
              (codec.ALLOCATIONS, stopped, 3, 3), (codec.ALLOCATIONS, live, 4, 4)])
    assert usage.refusal(v, _part([_a("p", 400)])) is None
    assert usage.refusal(v, _part([_a("p", 401)])) == "node has no room: cpu"
    assert usage.refusal(v, _part([_a("p", 100, 901)])) == "node has no room: memory"
    # The plan stops "l": its room is free for the placement.
    assert usage.refusal(v, _part([_a("p", 1000)], [_a("l", 600, desired=STOP)])) is None
    # An in-place update of "l" is counted once, at its new size.
    assert usage.refusal(v, _part([_a("p", 300)], [_a("l", 700)])) is None
    assert usage.refusal(v, _part([_a("p", 301)], [_a("l", 700)])) == "node has no room: cpu"


def test_record_sums_what_stays_live() -> None:
    v = view([(codec.NODES, ready_node(), 1, 1), (codec.ALLOCATIONS, _a("l", 600, 10), 2, 2)])
    rec = usage.record(v, _part([_a("p", 300, 20)]), "e1")
    assert (rec.node_id, rec.reserved.cpu, rec.reserved.memory_mb, rec.allocations,
            rec.eval_id) == ("n1", 900, 30, 2, "e1")


def test_judge_lists_only_refused_nodes() -> None:
    v = view([(codec.NODES, ready_node(), 1, 1)])
    parts = usage.by_node([_a("p", 100), _a("q", 2000)], [])
    assert usage.judge(v, parts) == {"n1": "node has no room: cpu"}
    assert usage.judge(v, usage.by_node([_a("p", 100)], [])) == {}

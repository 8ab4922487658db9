"""The drain planners (:mod:`drover.state.nodes.core.drain`): starting, cancelling and
completing a drain, and the drainer's migrate marks."""

from __future__ import annotations

from state_core_data import context, key, ready_node, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, node_pb2
from drover.coord.kv import Compare
from drover.errors import InvalidArgument, NotFound
from drover.state.core import codec
from drover.state.nodes.core import drain, nodes

ELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE
INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE


def _node(plan: object) -> node_pb2.Node:
    return codec.decode(codec.NODES, plan.ops[0].value, 2, 3)  # type: ignore[attr-defined,no-any-return]


def _start(deadline: int = 3600) -> state_pb2.UpdateNodeDrainRequest:
    req = state_pb2.UpdateNodeDrainRequest(id="n1")
    req.drain_strategy.deadline.FromSeconds(deadline)
    return req


def _live() -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id="a1", namespace="default", job_id="web", node_id="n1",
                                     desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)


def test_a_drain_makes_the_node_ineligible_and_loses_no_allocation() -> None:
    v = view([(codec.NODES, ready_node(scheduling_eligibility=ELIGIBLE), 2, 3),
              (codec.ALLOCATIONS, _live(), 4, 5)])
    plan = drain.plan_update_node_drain(v, context(), _start())
    assert [e.kind for e in plan.events] == [codec.NODES]  # no allocation touched
    n = _node(plan)
    assert n.drain and n.scheduling_eligibility == INELIGIBLE
    assert n.last_drain.status == node_pb2.DRAIN_STATUS_DRAINING
    assert (n.drain_strategy.force_deadline.ToNanoseconds()
            - n.drain_strategy.started_at.ToNanoseconds()) == 3600 * 10**9


def test_the_legacy_drain_flag_starts_a_drain_with_the_default_deadline() -> None:
    v = view([(codec.NODES, ready_node(), 2, 3), (codec.ALLOCATIONS, _live(), 4, 5)])
    plan = nodes.plan_node_status(v, context(), state_pb2.UpdateNodeStatusRequest(
        id="n1", drain=True))
    assert [e.kind for e in plan.events] == [codec.NODES]
    n = _node(plan)
    assert n.drain_strategy.deadline.seconds == 3600 and plan.respond(9).lost == 0


def _draining() -> node_pb2.Node:
    n = ready_node(drain=True, scheduling_eligibility=INELIGIBLE)
    n.drain_strategy.deadline.FromSeconds(60)
    n.last_drain.status = node_pb2.DRAIN_STATUS_DRAINING
    return n


def test_completion_clears_the_drain_and_keeps_the_node_ineligible() -> None:
    v = view([(codec.NODES, _draining(), 2, 3)])
    plan = drain.plan_update_node_drain(v, context(), state_pb2.UpdateNodeDrainRequest(
        id="n1", complete=True, deadlined=True))
    n = _node(plan)
    assert not n.drain and not n.HasField("drain_strategy")
    assert n.scheduling_eligibility == INELIGIBLE
    assert (n.last_drain.status, n.last_drain.deadlined) == (node_pb2.DRAIN_STATUS_COMPLETE, True)


def test_completing_a_drain_no_longer_running_writes_nothing() -> None:
    v = view([(codec.NODES, ready_node(), 2, 3)])
    assert not drain.plan_update_node_drain(v, context(), state_pb2.UpdateNodeDrainRequest(
        id="n1", complete=True)).writes


def test_cancel_with_mark_eligible_unblocks_blocked_evaluations() -> None:
    blocked = evaluation_pb2.Evaluation(id="b1", namespace="default", type="service",
                                        status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)
    v = view([(codec.NODES, _draining(), 2, 3), (codec.EVALUATIONS, blocked, 4, 4)])
    plan = drain.plan_update_node_drain(v, context(), state_pb2.UpdateNodeDrainRequest(
        id="n1", mark_eligible=True))
    n = _node(plan)
    assert n.scheduling_eligibility == ELIGIBLE
    assert n.last_drain.status == node_pb2.DRAIN_STATUS_CANCELED
    assert plan.respond(9).unblocked == 1
    keep = drain.plan_update_node_drain(v, context(), state_pb2.UpdateNodeDrainRequest(id="n1"))
    assert _node(keep).scheduling_eligibility == INELIGIBLE and keep.respond(9).unblocked == 0


def test_complete_with_a_strategy_is_refused() -> None:
    v = view([(codec.NODES, _draining(), 2, 3)])
    req = _start()
    req.complete = True
    try:
        drain.plan_update_node_drain(v, context(), req)
    except InvalidArgument:
        return
    raise AssertionError("complete with a strategy was accepted")


def test_migrate_marks_are_compared_and_written_with_their_evaluation() -> None:
    v = view([(codec.ALLOCATIONS, _live(), 4, 5)])
    req = state_pb2.UpdateAllocDesiredTransitionRequest(
        allocations=[state_pb2.AllocTransition(namespace="default", id="a1")],
        evaluations=[evaluation_pb2.Evaluation(id="e1", namespace="default", job_id="web",
                                               type="service", triggered_by="node-drain")])
    req.allocations[0].transition.migrate = True
    plan = drain.plan_alloc_transitions(v, context(), req)
    assert Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 5) in plan.compares
    a = codec.decode(codec.ALLOCATIONS, plan.ops[0].value, 4, 6)  # type: ignore[union-attr]
    assert a.desired_transition.migrate
    assert [e.kind for e in plan.events] == [codec.ALLOCATIONS, codec.EVALUATIONS]


def test_a_mark_on_a_missing_allocation_is_not_found() -> None:
    req = state_pb2.UpdateAllocDesiredTransitionRequest(
        allocations=[state_pb2.AllocTransition(namespace="default", id="gone")])
    try:
        drain.plan_alloc_transitions(view([]), context(), req)
    except NotFound:
        return
    raise AssertionError("a mark on a missing allocation was accepted")

"""The node planners (:mod:`drover.state.nodes.core.nodes`) on views built from plain
data: a node going down, a node registering ready."""

from __future__ import annotations

from state_core_data import context, key, ready_node, service_job, stored, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    evaluation_pb2,
    node_pb2,
)
from drover.coord.kv import Compare
from drover.state.core import codec
from drover.state.nodes.core import nodes

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED


def test_a_node_going_down_marks_its_live_allocations_lost_and_evaluates_their_job() -> None:
    job = stored(service_job(), 1)
    live = allocation_pb2.Allocation(id="a1", namespace="default", job_id="web", node_id="n1",
                                     desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    v = view([(codec.NODES, ready_node(), 2, 3), (codec.ALLOCATIONS, live, 4, 5),
              (codec.JOBS, job, 1, 1)])
    req = state_pb2.UpdateNodeStatusRequest(id="n1", status=node_pb2.NODE_STATUS_DOWN)
    plan = nodes.plan_node_status(v, context(), req)
    assert plan.compares == (Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 3),
                             Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 5))
    assert [e.kind for e in plan.events] == [codec.NODES, codec.ALLOCATIONS, codec.EVALUATIONS]
    resp = plan.respond(9)
    assert (resp.lost, list(resp.eval_ids)) == (1, ["id-1"])
    same = state_pb2.UpdateNodeStatusRequest(id="n1", status=node_pb2.NODE_STATUS_READY)
    assert not nodes.plan_node_status(v, context(), same).writes


def test_a_node_registering_ready_unblocks_blocked_evaluations() -> None:
    blocked = evaluation_pb2.Evaluation(id="b1", namespace="default", type="service",
                                        status=BLOCKED)
    plan = nodes.plan_upsert_node(view([(codec.EVALUATIONS, blocked, 2, 2)]), context(),
                                  ready_node())
    assert plan.compares == (Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 0),
                             Compare(key(codec.EVALUATIONS, "default", "b1"), "mod", 2))
    ev = codec.decode(codec.EVALUATIONS, plan.ops[1].value, 2, 3)  # type: ignore[union-attr]
    assert ev.status == PENDING

"""Node drain planners (pure): UpdateNodeDrain and UpdateAllocDesiredTransition.

Nomad's model (``Node.UpdateDrain``, ``updateNodeDrainImpl``,
``AllocUpdateDesiredTransition``):

- setting a drain strategy makes the node ineligible and ``drain`` true;
  ``started_at`` is kept across updates of a running drain, the deadline
  restamped (:func:`drover.drain.strategy.stamp`); ``last_drain`` says
  ``draining``;
- cancelling clears the strategy, ``last_drain`` says ``canceled``; the node
  stays ineligible unless ``mark_eligible`` (then it unblocks blocked
  evaluations, capacity having grown);
- ``complete`` (the drainer's, fenced by the shell): clears the strategy of a
  node still draining, ``last_drain`` says ``complete``, and the node stays
  ineligible until re-enabled. Completing a node no longer draining writes
  nothing (a cancel won);
- nothing here touches allocations: the drainer marks them with
  ``desired_transition.migrate`` (:func:`plan_alloc_transitions`) at the pace
  of each group's ``migrate`` block, with one ``node-drain`` evaluation per
  job in the same txn; the worker moves them.
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import node_pb2
from drover.drain.strategy import stamp
from drover.errors import InvalidArgument
from drover.scheduling.eligibility import schedulable
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan, no_write
from drover.state.core.rules import existing
from drover.state.core.view import View
from drover.state.evaluations.core.unblock import room_on, unblock_where

ELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE
INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE


def apply_drain(node: node_pb2.Node, request: Any, now: Any) -> bool:
    """Change ``node`` as the request says; False when nothing is to be written
    (completing a drain that is no longer running)."""
    running = node.HasField("drain_strategy")
    if request.HasField("drain_strategy"):
        if request.complete:
            raise InvalidArgument("complete clears the drain: drain_strategy must be unset",
                                  metadata={"field": "complete"})
        node.drain_strategy.CopyFrom(stamp(request.drain_strategy,
                                           node.drain_strategy if running else None,
                                           now.ToNanoseconds()))
        node.drain = True
        node.scheduling_eligibility = INELIGIBLE
        if not running:
            node.last_drain.Clear()
            node.last_drain.started_at.CopyFrom(node.drain_strategy.started_at)
        node.last_drain.status = node_pb2.DRAIN_STATUS_DRAINING
    else:
        if request.complete and not running:
            return False
        node.ClearField("drain_strategy")
        node.drain = False
        if running:
            node.last_drain.status = (node_pb2.DRAIN_STATUS_COMPLETE if request.complete
                                      else node_pb2.DRAIN_STATUS_CANCELED)
            node.last_drain.deadlined = bool(request.complete and request.deadlined)
        if request.mark_eligible and not request.complete:
            node.scheduling_eligibility = ELIGIBLE
    node.last_drain.updated_at.CopyFrom(now)
    return True


def plan_update_node_drain(view: View, ctx: WriteContext, request: Any) -> WritePlan:
    found = existing(view, codec.NODES, codec.GLOBAL_NS, request.id, "node")
    node = found.obj
    before = schedulable(node)
    if not apply_drain(node, request, ctx.now):
        return no_write(lambda rev: state_pb2.UpdateNodeDrainResponse(index=rev))
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.put(codec.NODES, codec.GLOBAL_NS, node.id, node, found.mod)
    unblocked = 0
    if schedulable(node) and not before:
        unblocked = unblock_where(view, ctx, plan, [room_on(view, node)],
                                  ctx.max_objects - len(plan.ops))
    return plan.build(lambda rev: state_pb2.UpdateNodeDrainResponse(
        index=rev, unblocked=unblocked))


def plan_alloc_transitions(view: View, ctx: WriteContext, request: Any) -> WritePlan:
    """Set each allocation's desired transition (compared on its revision: a
    stale decision is re-made by the drainer) and create the evaluations."""
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    for i, t in enumerate(request.allocations):
        ns = t.namespace or "default"
        found = existing(view, codec.ALLOCATIONS, ns, t.id, f"allocations[{i}]: allocation")
        a = found.obj
        a.desired_transition.MergeFrom(t.transition)
        a.modify_time.CopyFrom(ctx.now)
        plan.put(codec.ALLOCATIONS, ns, a.id, a, found.mod)
    for ev in request.evaluations:
        if not ev.create_time.ByteSize():
            ev.create_time.CopyFrom(ctx.now)
        ev.modify_time.CopyFrom(ctx.now)
        plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, 0)
    return plan.build(lambda rev: state_pb2.UpdateAllocDesiredTransitionResponse(index=rev))




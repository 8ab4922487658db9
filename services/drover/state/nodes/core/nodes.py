"""Node planners: UpsertNode (register, +unblock) and UpdateNodeStatus.

A node going down marks its live allocations lost and creates a
``node-update`` evaluation per affected job, in the same txn (bounded by
the request cap: the rest are lost on the node's next status change). A
drain loses nothing: ``drain`` true starts one with the default deadline
(:mod:`drover.state.nodes.core.drain`; the allocations migrate as the drainer
allows), false cancels it. A
node that becomes schedulable (ready, eligible, not draining; also on
registration) unblocks blocked evaluations and evaluates the system jobs
of its datacenter (:mod:`.system_jobs`) in the same txn. A heartbeat is
not planned here: it renews the node's lease (:mod:`.liveness`) and never
changes what an operator set (down, drain). A status change that changes
nothing writes nothing.
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, node_pb2
from drover.drain.strategy import DEFAULT_DEADLINE
from drover.errors import InvalidArgument
from drover.scheduling.eligibility import UNRESPONSIVE, schedulable
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan, no_write
from drover.state.core.rules import existing
from drover.state.core.view import View, found_all
from drover.state.evaluations.core.unblock import room_on, unblock_where
from drover.state.jobs.core import system_jobs
from drover.state.jobs.core.register import job_type_name
from drover.state.nodes.core.drain import apply_drain
from drover.state.nodes.core.node_secret import (
    UNCHECKED,
    NodeProof,
    check_node,
    registration_secret,
)
from drover.worker.resources import is_live


def plan_upsert_node(view: View, ctx: WriteContext, node: node_pb2.Node,
                     proof: NodeProof = UNCHECKED) -> WritePlan:
    """Register or replace a node (compared on the revision seen); a node
    that can take allocations now and could not before unblocks. Its
    secret: issued on the first registration, else ``proof`` must be the
    node's (:func:`drover.state.nodes.core.node_secret.registration_secret`)."""
    old = view.get(codec.NODES, codec.GLOBAL_NS, node.id)
    secret = registration_secret(old.obj if old else None, node, proof, ctx.new_id)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.put(codec.NODES, codec.GLOBAL_NS, node.id, node, old.mod if old else 0)
    if schedulable(node) and not (old is not None and schedulable(old.obj)):
        system_jobs.evaluate(view, ctx, plan, node, ctx.max_objects - len(plan.ops))
        unblock_where(view, ctx, plan, [room_on(view, node)], ctx.max_objects - len(plan.ops))
    return plan.build(lambda rev: state_pb2.UpsertNodeResponse(index=rev, secret_id=secret))


def plan_node_status(view: View, ctx: WriteContext, request: Any,
                     proof: NodeProof = UNCHECKED) -> WritePlan:
    """UpdateNodeStatus; a heartbeat is the node's own word: ``proof`` must
    be its secret (:mod:`drover.state.nodes.core.node_secret`)."""
    found = existing(view, codec.NODES, codec.GLOBAL_NS, request.id, "node")
    node = found.obj
    if request.heartbeat or proof.presented is not None:
        check_node(node, proof, "a heartbeat" if request.heartbeat else "a node status")
    before = schedulable(node)
    was_down = node.status in UNRESPONSIVE
    if request.status:
        node.status = request.status
        node.status_description = ""  # the operator's (or the node's) word now
    if request.HasField("drain") and request.drain != node.drain:
        apply_drain(node, _legacy_drain(request.drain), ctx.now)
    if request.scheduling_eligibility:
        if (request.scheduling_eligibility == node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE
                and node.HasField("drain_strategy")):
            raise InvalidArgument(  # Nomad's Node.UpdateEligibility rule
                "can not set the node's scheduling eligibility to eligible while it is "
                "draining (cancel the drain: drover node drain --disable)",
                metadata={"field": "scheduling_eligibility"})
        node.scheduling_eligibility = request.scheduling_eligibility
    unchanged = view.get(codec.NODES, codec.GLOBAL_NS, request.id)
    if unchanged is not None and node == unchanged.obj:
        return no_write(lambda rev: state_pb2.UpdateNodeStatusResponse(index=rev))
    node.status_updated_at.CopyFrom(ctx.now)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.put(codec.NODES, codec.GLOBAL_NS, node.id, node, found.mod)
    lost, unblocked = 0, 0
    eval_ids: list[str] = []
    if node.status in UNRESPONSIVE and not was_down:
        lost, eval_ids = mark_lost(view, ctx, plan, node.id, "node is down")
    elif schedulable(node) and not before:
        eval_ids = system_jobs.evaluate(view, ctx, plan, node, ctx.max_objects - len(plan.ops))
        unblocked = unblock_where(view, ctx, plan, [room_on(view, node)],
                                  ctx.max_objects - len(plan.ops))
    return plan.build(lambda rev: state_pb2.UpdateNodeStatusResponse(
        index=rev, lost=lost, eval_ids=eval_ids, unblocked=unblocked))


def mark_lost(view: View, ctx: WriteContext, plan: PlanBuilder, node_id: str, why: str,
              owed: set[tuple[str, str]] | None = None) -> tuple[int, list[str]]:
    """Mark the node's live allocations lost and evaluate their jobs.

    Bounded by the request cap, counting what the plan will hold once it is
    written: per allocation its put, per job of this node its evaluation,
    and per job of the whole plan its status and summary write
    (:func:`drover.state.jobs.core.job_status.follow` adds those). ``owed``:
    the jobs earlier nodes of the same plan touched (their writes are owed
    already); this node's jobs are added to it. A node with more live
    allocations than fit loses the rest on its next status change (a sim
    node re-reports)."""
    owed = set() if owed is None else owed
    jobs: dict[tuple[str, str], Any] = {}
    lost = 0
    for _, found in found_all(view, codec.ALLOCATIONS, "node_id", node_id):
        a = found.obj
        if not is_live(a):
            continue
        ident = (a.namespace, a.job_id)
        evaluations = len(jobs) + (ident not in jobs)
        job_writes = len(owed) + (ident not in owed)
        if len(plan.ops) + 1 + evaluations + job_writes > ctx.max_objects:
            break
        a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
        a.client_description = why
        a.modify_time.CopyFrom(ctx.now)
        plan.put(codec.ALLOCATIONS, a.namespace, a.id, a, found.mod)
        lost += 1
        jobs.setdefault(ident, a)
        owed.add(ident)
    ids = []
    for ns, job_id in jobs:
        job_found = view.get(codec.JOBS, ns, job_id)
        job = job_found.obj if job_found else None
        ev = evaluation_pb2.Evaluation(
            id=ctx.new_id(), namespace=ns, priority=job.priority if job else 50,
            type="service" if job is None else job_type_name(job), triggered_by="node-update",
            job_id=job_id, node_id=node_id, status=evaluation_pb2.EVALUATION_STATUS_PENDING,
            create_time=ctx.timestamp(), modify_time=ctx.timestamp(),
            job_modify_index=job.job_modify_index if job else 0)
        plan.put(codec.EVALUATIONS, ns, ev.id, ev, None)
        ids.append(ev.id)
    return lost, ids


def _legacy_drain(on: bool) -> state_pb2.UpdateNodeDrainRequest:
    """UpdateNodeStatus's ``drain``: a drain with the default deadline, or a cancel."""
    if not on:
        return state_pb2.UpdateNodeDrainRequest()
    strategy = node_pb2.DrainStrategy()
    strategy.deadline.FromSeconds(int(DEFAULT_DEADLINE))
    return state_pb2.UpdateNodeDrainRequest(drain_strategy=strategy)

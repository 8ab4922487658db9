"""Allocation and scheduler-config planners.

- **UpsertAllocations**: whole new states from workers and clients; each
  allocation compared on the revision the view holds (absent: a create),
  an existing one keeps its ``create_time``; its job and deployment must
  exist (:func:`allocation_owners`, compared on their create revision).
  One stored exactly so already (a retried create,
  :mod:`drover.state.core.recreate`) is compared, not put: all such, and
  nothing is written.
- **UpdateAllocations** merges: only client status, description and
  deployment health of *existing* allocations (updates never create),
  from the node each runs on (:mod:`drover.state.nodes.core.node_secret`), and
  none of a node that is down (:mod:`.client_reports`); a report of a
  failure the group's reschedule policy allows creates its
  ``alloc-failure`` evaluation in the same txn (:mod:`.alloc_failure`).
- **SetSchedulerConfig**: a put compared on the config's revision; with
  ``cas_index`` it applies only when that is the revision the caller saw,
  and answers ``updated=false`` (writing nothing) otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.errors import InvalidArgument
from drover.state.allocations.core import alloc_failure, usage
from drover.state.allocations.core.client_reports import refuse_unresponsive_node
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.recreate import identical_existing
from drover.state.core.rules import allocation_owners, existing
from drover.state.core.view import View
from drover.state.evaluations.core.unblock import changed_rooms, unblock_where
from drover.state.nodes.core.node_secret import UNCHECKED, NodeProof, check_node
from drover.worker.resources import Vec, is_live


def apply_allocation_update(alloc: Any, update: Any, now: Any) -> None:
    """Merge one AllocationUpdate (client status, description, deployment
    health) into ``alloc``; unset fields leave the stored values alone.
    Shared by UpdateAllocations and the watcher's UpdateDeployment."""
    if update.client_status:
        before = alloc.client_status
        alloc.client_status = update.client_status
        alloc_failure.finished(alloc, before, now)
    if update.client_description:
        alloc.client_description = update.client_description
    if update.HasField("healthy"):
        alloc.deployment_status.healthy = update.healthy
        alloc.deployment_status.timestamp.CopyFrom(now)
    alloc.modify_time.CopyFrom(now)


def plan_upsert_allocs(view: View, ctx: WriteContext, allocs: Sequence[Any]) -> WritePlan:
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    allocation_owners(view, list(allocs), plan)
    written = []
    for a in allocs:  # the call's own copies: set idempotently on each attempt
        if identical_existing(view, codec.ALLOCATIONS, a.namespace, a.id, a):
            # a retried create: stays as stored (compared), nothing put
            plan.compare_mod(codec.ALLOCATIONS, a.namespace, a.id,
                             view.mod(codec.ALLOCATIONS, a.namespace, a.id))
            continue
        written.append(a)
        old = view.get(codec.ALLOCATIONS, a.namespace, a.id)
        a.create_time.CopyFrom(old.obj.create_time if old else ctx.now)
        a.modify_time.CopyFrom(ctx.now)
        plan.put(codec.ALLOCATIONS, a.namespace, a.id, a, old.mod if old else 0)
    # A management override, never judged for room (plans are): it rewrites
    # the usage record of every node it writes on, so a plan judged before
    # it on any replica fails its compare and is judged again with it (an
    # identical re-create changes no reservation: no record to rewrite).
    parts = usage.by_node((a for a in written if a.node_id), ())
    for part in parts.values():
        mod = view.mod(codec.NODE_USAGE, codec.GLOBAL_NS, part.node_id)
        plan.put(codec.NODE_USAGE, codec.GLOBAL_NS, part.node_id,
                 usage.record(view, part, ""), mod)
    ids = [a.id for a in allocs]
    return plan.build(lambda rev: state_pb2.UpsertAllocationsResponse(
        allocation_ids=ids, index=rev))


def plan_update_allocs(view: View, ctx: WriteContext, updates: Sequence[Any],
                       proof: NodeProof = UNCHECKED) -> WritePlan:
    """Client reports, accepted only from the node each allocation runs on
    (``proof``: :mod:`drover.state.nodes.core.node_secret`). One that ends a live
    allocation (complete, failed, lost) frees its room: blocked evaluations
    it fits are unblocked in the same txn (Nomad's FSM does on a client's
    terminal update); a failure the group's reschedule policy allows creates
    its ``alloc-failure`` evaluation in the same txn too."""
    return _plan_reports(view, ctx, [(u, proof, None) for u in updates])


def plan_node_updates(view: View, ctx: WriteContext,
                      nodes: Sequence[tuple[str, Sequence[Any], NodeProof]]) -> WritePlan:
    """Many nodes' client reports in one txn: ``(node_id, updates, proof)``
    per node, each group speaking for its own node only (every allocation
    it reports must run on ``node_id``), as :func:`plan_update_allocs` for
    one node. One txn: the job status and summary of a job many nodes
    report on are rewritten once, not once per node (and per-node calls in
    flight together would conflict on them)."""
    return _plan_reports(view, ctx, [(u, proof, node_id) for node_id, updates, proof in nodes
                                     for u in updates])


def _plan_reports(view: View, ctx: WriteContext,
                  reports: Sequence[tuple[Any, NodeProof, str | None]]) -> WritePlan:
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    merged = []
    freed: dict[str, Vec] = {}
    for u, proof, speaks_for in reports:
        ns = u.namespace or "default"
        found = existing(view, codec.ALLOCATIONS, ns, u.id, "allocation")
        if speaks_for is not None and found.obj.node_id != speaks_for:
            raise InvalidArgument(
                f"allocation {u.id!r} runs on node {found.obj.node_id!r}, not on "
                f"{speaks_for!r} whose updates report it",
                metadata={"field": "nodes.updates", "node_id": speaks_for, "allocation": u.id})
        if proof.required or proof.presented is not None:
            node = existing(view, codec.NODES, codec.GLOBAL_NS, found.obj.node_id, "node")
            check_node(node.obj, proof, f"an update of allocation {u.id!r}")
        refuse_unresponsive_node(view, found.obj)
        before = found.obj.client_status
        was_live = is_live(found.obj)
        apply_allocation_update(found.obj, u, ctx.now)
        if was_live and not is_live(found.obj):
            freed[found.obj.node_id] = (freed.get(found.obj.node_id, Vec())
                                        + Vec.of(found.obj.resources))
        merged.append((ns, u.id, found, alloc_failure.newly_failed(before, found.obj)))
    # Failures the policy lets reschedule: their evaluations, in this txn.
    alloc_failure.plan_failure_evals(view, ctx, plan, [f.obj for *_, f, new in merged if new],
                                     room=ctx.max_objects - len(merged))
    for ns, alloc_id, found, _ in merged:
        plan.put(codec.ALLOCATIONS, ns, alloc_id, found.obj, found.mod)
    if freed:
        budget = min(ctx.max_objects - len(plan.ops), ctx.max_compares - 1 - len(plan.compares))
        unblock_where(view, ctx, plan, changed_rooms(view, freed), budget)
    return plan.build(lambda rev: state_pb2.UpdateAllocationsResponse(index=rev))

"""Allocation and scheduler-config planners.

- **UpsertAllocations**: whole new states from workers and clients; each
  allocation compared on the revision the view holds (absent: a create),
  an existing one keeps its ``create_time``; its job and deployment must
  exist (:func:`allocation_owners`, compared on their create revision).
- **UpdateAllocations** merges: only client status, description and
  deployment health of *existing* allocations (updates never create), and
  none of a node that is down (:mod:`.client_reports`).
- **SetSchedulerConfig**: a put compared on the config's revision; with
  ``cas_index`` it applies only when that is the revision the caller saw,
  and answers ``updated=false`` (writing nothing) otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.state.core import codec
from drover.state.core.client_reports import refuse_unresponsive_node
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan, no_write
from drover.state.core.rules import allocation_owners, cas_holds, existing
from drover.state.core.view import View, scheduler_config


def apply_allocation_update(alloc: Any, update: Any, now: Any) -> None:
    """Merge one AllocationUpdate (client status, description, deployment
    health) into ``alloc``; unset fields leave the stored values alone.
    Shared by UpdateAllocations and the watcher's UpdateDeployment."""
    if update.client_status:
        alloc.client_status = update.client_status
    if update.client_description:
        alloc.client_description = update.client_description
    if update.HasField("healthy"):
        alloc.deployment_status.healthy = update.healthy
        alloc.deployment_status.timestamp.CopyFrom(now)
    alloc.modify_time.CopyFrom(now)


def plan_upsert_allocs(view: View, ctx: WriteContext, allocs: Sequence[Any]) -> WritePlan:
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    allocation_owners(view, list(allocs), plan)
    for a in allocs:  # the call's own copies: set idempotently on each attempt
        old = view.get(codec.ALLOCATIONS, a.namespace, a.id)
        a.create_time.CopyFrom(old.obj.create_time if old else ctx.now)
        a.modify_time.CopyFrom(ctx.now)
        plan.put(codec.ALLOCATIONS, a.namespace, a.id, a, old.mod if old else 0)
    ids = [a.id for a in allocs]
    return plan.build(lambda rev: state_pb2.UpsertAllocationsResponse(
        allocation_ids=ids, index=rev))


def plan_update_allocs(view: View, ctx: WriteContext, updates: Sequence[Any]) -> WritePlan:
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    for u in updates:
        ns = u.namespace or "default"
        found = existing(view, codec.ALLOCATIONS, ns, u.id, "allocation")
        refuse_unresponsive_node(view, found.obj)
        apply_allocation_update(found.obj, u, ctx.now)
        plan.put(codec.ALLOCATIONS, ns, u.id, found.obj, found.mod)
    return plan.build(lambda rev: state_pb2.UpdateAllocationsResponse(index=rev))


def plan_scheduler_config(view: View, ctx: WriteContext, config: Any,
                          cas_index: int | None) -> WritePlan:
    _, mod = scheduler_config(view)
    if not cas_holds(cas_index, mod):
        return no_write(lambda rev: state_pb2.SetSchedulerConfigResponse(updated=False,
                                                                          index=rev))
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.put(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID, config, mod)
    return plan.build(lambda rev: state_pb2.SetSchedulerConfigResponse(updated=True, index=rev))

"""Allocation writes: UpsertAllocations and UpdateAllocations (clients'
reports, one node or many per call). Reads: GetAllocation, ListAllocations
(:mod:`drover.state.queries`).

Writes are planned by :mod:`drover.state.allocations.core.allocs` and run
by :meth:`~drover.state.pipeline.WriteCalls.transact` on a synced view
(their callers, workers and clients, send whole new states, not deltas
against something they read, so they judge on current data), re-planned on
a conflict.
"""

from __future__ import annotations

from typing import Any

from drover.acl.tokens import hash_secret
from drover.errors import InvalidArgument
from drover.state.allocations.core import allocs as plans
from drover.state.core.rules import within_cap
from drover.state.core.validate import check_name, validated_allocs
from drover.state.nodes.core.node_secret import NodeProof
from drover.state.pipeline import Caller, WriteCalls


class AllocationsRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    # -- allocations ------------------------------------------------------

    async def upsert_allocations(self, request: Any, caller: Caller) -> Any:
        if not request.allocations:
            raise InvalidArgument("allocations must not be empty",
                                  metadata={"field": "allocations"})
        # One usage record per node rides in the txn (drover.state.allocations.core.usage).
        nodes = {a.node_id for a in request.allocations if a.node_id}
        within_cap(len(request.allocations) + len(nodes), "allocations",
                   self.writes.max_objects)
        allocs = validated_allocs(request.allocations)
        ctx = self.writes.write_context()
        return await self.writes.transact(lambda view: plans.plan_upsert_allocs(view, ctx, allocs),
                                          self.writes.fence(caller), sync_first=True)

    async def update_allocations(self, request: Any, caller: Caller) -> Any:
        if request.nodes:
            return await self._update_many_nodes(request, caller)
        if not request.updates:
            raise InvalidArgument("updates must not be empty", metadata={"field": "updates"})
        within_cap(len(request.updates), "updates", self.writes.max_objects)
        for i, u in enumerate(request.updates):
            check_name(u.id, f"updates[{i}].id")
            check_name(u.namespace or "default", f"updates[{i}].namespace")
        ctx = self.writes.write_context()
        proof = self.writes.node_proof(caller)
        return await self.writes.transact(
            lambda view: plans.plan_update_allocs(view, ctx, request.updates, proof),
            self.writes.fence(caller), sync_first=True)

    async def _update_many_nodes(self, request: Any, caller: Caller) -> Any:
        """Many nodes' reports, one txn; each group with its node's secret."""
        if request.updates:
            raise InvalidArgument("updates must be empty when nodes is set (each node's "
                                  "updates go in its group)", metadata={"field": "updates"})
        within_cap(sum(len(n.updates) for n in request.nodes), "updates",
                   self.writes.max_objects)
        required = self.writes.node_proof(caller).required
        groups = []
        for i, n in enumerate(request.nodes):
            check_name(n.node_id, f"nodes[{i}].node_id")
            for j, u in enumerate(n.updates):
                check_name(u.id, f"nodes[{i}].updates[{j}].id")
                check_name(u.namespace or "default", f"nodes[{i}].updates[{j}].namespace")
            proof = NodeProof(hash_secret(n.secret_id) if n.secret_id else None, required)
            groups.append((n.node_id, list(n.updates), proof))
        return await self.writes.write(
            lambda view, ctx: plans.plan_node_updates(view, ctx, groups),
            caller, sync_first=True)

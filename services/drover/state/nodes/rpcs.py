"""UpsertNode: a node registers (or re-registers) itself (reads: GetNode,
ListNodes, :mod:`drover.state.queries`). Planned by
:func:`drover.state.nodes.core.nodes.plan_upsert_node` (the node's secret
checked, evaluations unblocked where it adds room), on a synced view."""

from __future__ import annotations

from typing import Any

from drover.api.types.v1 import node_pb2
from drover.state.core.validate import check_name
from drover.state.nodes.core.nodes import plan_upsert_node
from drover.state.pipeline import Caller, WriteCalls


class NodesRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    async def upsert_node(self, request: Any, caller: Caller) -> Any:
        node = node_pb2.Node()
        node.CopyFrom(request.node)
        check_name(node.id, "node.id")
        ctx = self.writes.write_context()
        if not node.status_updated_at.ByteSize():
            node.status_updated_at.CopyFrom(ctx.now)
        if not node.last_heartbeat.ByteSize():
            node.last_heartbeat.CopyFrom(ctx.now)  # registering proves it is alive
        proof = self.writes.node_proof(caller)
        return await self.writes.transact(lambda view: plan_upsert_node(view, ctx, node, proof),
                                          self.writes.fence(caller), sync_first=True)

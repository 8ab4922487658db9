"""UpdateNodeStatus: heartbeats, down, drain and eligibility of a node
(the planner and what it writes: :mod:`drover.state.core.nodes`)."""

from __future__ import annotations

from typing import Any

from drover.state.core.nodes import plan_node_status
from drover.state.core.validate import check_name
from drover.state.write_calls import WriteCalls


class NodeStatusRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    async def UpdateNodeStatus(self, request: Any, context: Any) -> Any:
        check_name(request.id, "id")
        ctx = self.writes.write_context()
        proof = self.writes.node_proof(context)
        return await self.writes.transact(
            lambda view: plan_node_status(view, ctx, request, proof),
            self.writes.fence(context), sync_first=True)

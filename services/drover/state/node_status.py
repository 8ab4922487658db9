"""UpdateNodeStatus: heartbeats, down, drain and eligibility of a node, and
ReapMissedHeartbeats (the planners and what they write:
:mod:`drover.state.core.nodes`, :mod:`drover.state.core.liveness`)."""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.state.core.nodes import plan_node_status
from drover.state.core.validate import check_name
from drover.state.liveness import NodeLiveness
from drover.state.write_calls import WriteCalls


class NodeStatusRpc:
    def __init__(self, writes: WriteCalls, liveness: NodeLiveness) -> None:
        self.writes = writes
        self.liveness = liveness

    async def UpdateNodeStatus(self, request: Any, context: Any) -> Any:
        check_name(request.id, "id")
        changes = (request.status or request.HasField("drain")
                   or request.scheduling_eligibility)
        resp = None
        if changes or not request.heartbeat:
            ctx = self.writes.write_context()
            resp = await self.writes.transact(lambda view: plan_node_status(view, ctx, request),
                                              self.writes.fence(context), sync_first=True)
        if not request.heartbeat:
            return resp
        beat = await self.liveness.heartbeat(request.id)
        if resp is None:
            return beat
        resp.heartbeat_ttl.CopyFrom(beat.heartbeat_ttl)
        resp.index = max(resp.index, beat.index)
        resp.unblocked += beat.unblocked
        return resp

    async def ReapMissedHeartbeats(self, request: Any, context: Any) -> Any:
        fence = self.writes.require_fence(context, "marking nodes down for missed heartbeats")
        resp = await self.liveness.reap(fence)
        return resp or state_pb2.ReapMissedHeartbeatsResponse()

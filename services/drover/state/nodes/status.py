"""UpdateNodeStatus: heartbeats, down, drain and eligibility of a node, and
ReapMissedHeartbeats (the planners and what they write:
:mod:`drover.state.nodes.core.nodes`, :mod:`drover.state.nodes.core.liveness`)."""

from __future__ import annotations

import asyncio
from typing import Any

from drover.acl.tokens import hash_secret
from drover.api.state.v1 import state_pb2
from drover.errors import DroverError, InvalidArgument
from drover.state.core.validate import check_name
from drover.state.nodes.core.node_secret import NodeProof
from drover.state.nodes.core.nodes import plan_node_status
from drover.state.nodes.liveness import NodeLiveness
from drover.state.pipeline import Caller, WriteCalls

#: Nodes one HeartbeatNodes call may carry.
MAX_HEARTBEATS = 1000
#: Heartbeats of one call in flight together (lease keepalives, the rare grant).
HEARTBEATS_IN_FLIGHT = 64


class NodeStatusRpc:
    def __init__(self, writes: WriteCalls, liveness: NodeLiveness) -> None:
        self.writes = writes
        self.liveness = liveness

    async def update_status(self, request: Any, caller: Caller) -> Any:
        check_name(request.id, "id")
        changes = (request.status or request.HasField("drain")
                   or request.scheduling_eligibility)
        proof = self.writes.node_proof(caller)
        resp = None
        if changes or not request.heartbeat:
            ctx = self.writes.write_context()
            resp = await self.writes.transact(
                lambda view: plan_node_status(view, ctx, request, proof),
                self.writes.fence(caller), sync_first=True)
        if not request.heartbeat:
            return resp
        beat = await self.liveness.heartbeat(request.id, proof)
        if resp is None:
            return beat
        resp.heartbeat_ttl.CopyFrom(beat.heartbeat_ttl)
        resp.index = max(resp.index, beat.index)
        resp.unblocked += beat.unblocked
        return resp

    async def reap_missed_heartbeats(self, request: Any, caller: Caller) -> Any:
        fence = self.writes.require_fence(caller, "marking nodes down for missed heartbeats")
        resp = await self.liveness.reap(fence)
        return resp or state_pb2.ReapMissedHeartbeatsResponse()

    async def heartbeat_nodes(self, request: Any, caller: Caller) -> Any:
        ids = list(request.node_ids)
        secrets = list(request.secret_ids)
        if len(ids) > MAX_HEARTBEATS:
            raise InvalidArgument(f"node_ids: {len(ids)} nodes; one call takes at most "
                                  f"{MAX_HEARTBEATS}", metadata={"field": "node_ids"})
        if secrets and len(secrets) != len(ids):
            raise InvalidArgument(f"secret_ids: {len(secrets)} secrets for {len(ids)} nodes; "
                                  "send one per node, in node_ids' order, or none",
                                  metadata={"field": "secret_ids"})
        for i, node_id in enumerate(ids):
            check_name(node_id, f"node_ids[{i}]")
        required = self.writes.node_proof(caller).required
        out = state_pb2.HeartbeatNodesResponse()
        beats = [out.heartbeats.add(node_id=node_id) for node_id in ids]
        gate = asyncio.Semaphore(HEARTBEATS_IN_FLIGHT)

        async def one(i: int, beat: Any) -> None:
            secret = secrets[i] if secrets else ""
            proof = NodeProof(hash_secret(secret) if secret else None, required)
            async with gate:
                try:
                    resp = await self.liveness.heartbeat(beat.node_id, proof)
                except DroverError as e:  # this node's, not the call's
                    beat.error_reason, beat.error_message = e.reason, e.message
                    return
            beat.heartbeat_ttl.CopyFrom(resp.heartbeat_ttl)
            beat.index, beat.unblocked = resp.index, resp.unblocked

        await asyncio.gather(*(one(i, b) for i, b in enumerate(beats)))
        return out

"""Deployment, allocation, node and scheduler-config RPCs.

Writes are planned by :mod:`drover.state.core.allocs` and
:mod:`drover.state.core.nodes` and run by :meth:`Base.transact` on a synced
view (their callers, workers and clients, send whole new states, not deltas
against something they read, so they judge on current data), re-planned
on a conflict.
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import node_pb2, scheduler_pb2
from drover.errors import InvalidArgument, NotFound
from drover.paging import PageRequest
from drover.state import codec
from drover.state.core import allocs as plans
from drover.state.core.allocs import apply_allocation_update
from drover.state.core.nodes import plan_upsert_node
from drover.state.core.rules import within_cap
from drover.state.core.validate import validated_allocs
from drover.state.reads import check_name, list_namespace, namespace_arg
from drover.state.service_base import Base

__all__ = ["ObjectsRpc", "apply_allocation_update"]


class ObjectsRpc(Base):
    def _get(self, kind: str, ns: str, oid: str, what: str) -> Any:
        msg = self.cache.tables[kind].decode(f"{ns}/{oid}")
        if msg is None:
            where = f" in namespace {ns!r}" if ns != codec.GLOBAL_NS else ""
            raise NotFound(f"{what} {oid!r} not found{where}")
        return msg

    # -- deployments ------------------------------------------------------

    async def GetDeployment(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.id, "id")
        index = await self.reader.prepare(codec.DEPLOYMENTS, request.query)
        d = self._get(codec.DEPLOYMENTS, ns, request.id, "deployment")
        return state_pb2.GetDeploymentResponse(deployment=d, meta=self.reader.meta(index))

    async def ListDeployments(self, request: Any, context: Any) -> Any:
        index = await self.reader.prepare(codec.DEPLOYMENTS, request.query)
        items, token = self.reader.list(codec.DEPLOYMENTS, PageRequest(
            "ListDeployments", request.page_size, request.page_token, request.order_by,
            list_namespace(request.namespace), request.prefix), request.filter)
        return state_pb2.ListDeploymentsResponse(
            deployments=items, next_page_token=token, meta=self.reader.meta(index))

    # -- allocations ------------------------------------------------------

    async def GetAllocation(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.id, "id")
        index = await self.reader.prepare(codec.ALLOCATIONS, request.query)
        a = self._get(codec.ALLOCATIONS, ns, request.id, "allocation")
        return state_pb2.GetAllocationResponse(allocation=a, meta=self.reader.meta(index))

    async def ListAllocations(self, request: Any, context: Any) -> Any:
        index = await self.reader.prepare(codec.ALLOCATIONS, request.query)
        items, token = self.reader.list(codec.ALLOCATIONS, PageRequest(
            "ListAllocations", request.page_size, request.page_token, request.order_by,
            list_namespace(request.namespace), request.prefix), request.filter)
        return state_pb2.ListAllocationsResponse(
            allocations=items, next_page_token=token, meta=self.reader.meta(index))

    async def UpsertAllocations(self, request: Any, context: Any) -> Any:
        if not request.allocations:
            raise InvalidArgument("allocations must not be empty",
                                  metadata={"field": "allocations"})
        within_cap(len(request.allocations), "allocations")
        allocs = validated_allocs(request.allocations)
        ctx = self.write_context()
        return await self.transact(lambda view: plans.plan_upsert_allocs(view, ctx, allocs),
                                   self.fence(context), sync_first=True)

    async def UpdateAllocations(self, request: Any, context: Any) -> Any:
        if not request.updates:
            raise InvalidArgument("updates must not be empty", metadata={"field": "updates"})
        within_cap(len(request.updates), "updates")
        for i, u in enumerate(request.updates):
            check_name(u.id, f"updates[{i}].id")
            check_name(u.namespace or "default", f"updates[{i}].namespace")
        ctx = self.write_context()
        return await self.transact(
            lambda view: plans.plan_update_allocs(view, ctx, request.updates),
            self.fence(context), sync_first=True)

    # -- nodes ------------------------------------------------------------

    async def UpsertNode(self, request: Any, context: Any) -> Any:
        node = node_pb2.Node()
        node.CopyFrom(request.node)
        check_name(node.id, "node.id")
        ctx = self.write_context()
        if not node.status_updated_at.ByteSize():
            node.status_updated_at.CopyFrom(ctx.now)
        if not node.last_heartbeat.ByteSize():
            node.last_heartbeat.CopyFrom(ctx.now)  # registering proves it is alive
        return await self.transact(lambda view: plan_upsert_node(view, ctx, node),
                                   self.fence(context), sync_first=True)

    async def GetNode(self, request: Any, context: Any) -> Any:
        check_name(request.id, "id")
        index = await self.reader.prepare(codec.NODES, request.query)
        node = self._get(codec.NODES, codec.GLOBAL_NS, request.id, "node")
        return state_pb2.GetNodeResponse(node=node, meta=self.reader.meta(index))

    async def ListNodes(self, request: Any, context: Any) -> Any:
        index = await self.reader.prepare(codec.NODES, request.query)
        # Nodes have no namespace: one table-wide walk (namespace None).
        items, token = self.reader.list(codec.NODES, PageRequest(
            "ListNodes", request.page_size, request.page_token, request.order_by, None,
            request.prefix), request.filter)
        return state_pb2.ListNodesResponse(nodes=items, next_page_token=token,
                                           meta=self.reader.meta(index))

    # -- scheduler config -------------------------------------------------

    def _config(self) -> tuple[scheduler_pb2.SchedulerConfig, int]:
        table = self.cache.tables[codec.SCHEDULER_CONFIG]
        e = table.objects.get(f"{codec.GLOBAL_NS}/{codec.SCHEDULER_CONFIG_ID}")
        if e is None:
            return scheduler_pb2.SchedulerConfig(), 0
        return table.decode_entry(e), e[1]

    async def GetSchedulerConfig(self, request: Any, context: Any) -> Any:
        index = await self.reader.prepare(codec.SCHEDULER_CONFIG, request.query)
        cfg, _ = self._config()
        return state_pb2.GetSchedulerConfigResponse(config=cfg, meta=self.reader.meta(index))

    async def SetSchedulerConfig(self, request: Any, context: Any) -> Any:
        cas = request.cas_index if request.HasField("cas_index") else None
        ctx = self.write_context()
        return await self.transact(
            lambda view: plans.plan_scheduler_config(view, ctx, request.config, cas),
            self.fence(context), sync_first=True)

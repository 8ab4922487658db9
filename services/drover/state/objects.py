"""Deployment, allocation, node and scheduler-config RPCs.

Writes compare every touched object's mod_revision as read from the synced
cache (optimistic concurrency) and retry a few times on a conflict, because
their callers (workers, clients) send whole new states, not deltas against
something they read. UpdateAllocations is the exception that merges: it
changes only client status and deployment health of existing allocations.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2, scheduler_pb2
from drover.errors import Conflict, InvalidArgument, NotFound
from drover.paging import PageRequest
from drover.state import codec
from drover.state.reads import check_name, list_namespace, namespace_arg
from drover.state.service_base import Base
from drover.state.store import Compare, Op, Put

RETRIES = 3



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

class ObjectsRpc(Base):
    async def _retry(self, attempt: Callable[[], Awaitable[Any]]) -> Any:
        for i in range(RETRIES):
            await self.cache.sync()
            try:
                return await attempt()
            except Conflict:
                if i == RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

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
        self.writer.check_size(len(request.allocations), "allocations")
        allocs = []
        for i, src in enumerate(request.allocations):
            a = allocation_pb2.Allocation()
            a.CopyFrom(src)
            check_name(a.id, f"allocations[{i}].id")
            a.namespace = a.namespace or "default"
            check_name(a.namespace, f"allocations[{i}].namespace")
            check_name(a.job_id, f"allocations[{i}].job_id")
            allocs.append(a)
        table = self.cache.tables[codec.ALLOCATIONS]

        async def attempt() -> Any:
            compares, ops = self._alloc_owners(allocs), []
            for a in allocs:
                key = self.keys.key(codec.ALLOCATIONS, a.namespace, a.id)
                old = table.objects.get(f"{a.namespace}/{a.id}")
                compares.append(Compare(key, "mod", old[1] if old else 0))
                a.create_time.CopyFrom(table.decode_entry(old).create_time if old else self.now())
                a.modify_time.CopyFrom(self.now())
                ops.append(Put(key, codec.encode(a)))
            rev = await self.writer.commit(compares, ops, self.fence(context))
            return state_pb2.UpsertAllocationsResponse(
                allocation_ids=[a.id for a in allocs], index=rev)

        return await self._retry(attempt)

    def _alloc_owners(self, allocs: list[Any]) -> list[Compare]:
        """The job (hence the namespace) and deployment of every allocation
        exist; compared on their create_revision, so a purge racing this
        write aborts it instead of leaving allocations of nothing."""
        compares: dict[bytes, Compare] = {}
        for i, a in enumerate(allocs):
            owners = [(codec.JOBS, a.job_id, "job", "job_id")]
            if a.deployment_id:
                owners.append((codec.DEPLOYMENTS, a.deployment_id, "deployment",
                               "deployment_id"))
            for kind, oid, what, field in owners:
                entry = self.cache.tables[kind].objects.get(f"{a.namespace}/{oid}")
                if entry is None:
                    raise NotFound(
                        f"allocations[{i}]: {what} {oid!r} not found in namespace "
                        f"{a.namespace!r}", metadata={"field": f"allocations[{i}].{field}"})
                if kind == codec.DEPLOYMENTS:
                    dep = self.cache.tables[kind].decode_entry(entry)
                    if dep.job_id != a.job_id:
                        raise InvalidArgument(
                            f"allocations[{i}]: deployment {oid!r} belongs to job "
                            f"{dep.job_id!r}, not {a.job_id!r}",
                            metadata={"field": f"allocations[{i}].deployment_id"})
                key = self.keys.key(kind, a.namespace, oid)
                compares[key] = Compare(key, "create", entry[2][0])
        return list(compares.values())

    async def UpdateAllocations(self, request: Any, context: Any) -> Any:
        if not request.updates:
            raise InvalidArgument("updates must not be empty", metadata={"field": "updates"})
        self.writer.check_size(len(request.updates), "updates")
        for i, u in enumerate(request.updates):
            check_name(u.id, f"updates[{i}].id")
            check_name(u.namespace or "default", f"updates[{i}].namespace")

        async def attempt() -> Any:
            compares: list[Compare] = []
            ops: list[Op] = []
            for u in request.updates:
                ns = u.namespace or "default"
                a = self._get(codec.ALLOCATIONS, ns, u.id, "allocation")
                key = self.keys.key(codec.ALLOCATIONS, ns, u.id)
                compares.append(Compare(key, "mod", a.modify_index))
                apply_allocation_update(a, u, self.now())
                ops.append(Put(key, codec.encode(a)))
            rev = await self.writer.commit(compares, ops, self.fence(context))
            return state_pb2.UpdateAllocationsResponse(index=rev)

        return await self._retry(attempt)

    # -- nodes ------------------------------------------------------------

    async def UpsertNode(self, request: Any, context: Any) -> Any:
        node = node_pb2.Node()
        node.CopyFrom(request.node)
        check_name(node.id, "node.id")
        if not node.status_updated_at.ByteSize():
            node.status_updated_at.CopyFrom(self.now())
        if not node.last_heartbeat.ByteSize():
            node.last_heartbeat.CopyFrom(self.now())  # registering proves it is alive
        key = self.keys.key(codec.NODES, codec.GLOBAL_NS, node.id)
        table = self.cache.tables[codec.NODES]

        async def attempt() -> Any:
            old = table.objects.get(f"{codec.GLOBAL_NS}/{node.id}")
            compares: list[Compare] = [Compare(key, "mod", old[1] if old else 0)]
            ops: list[Op] = [Put(key, codec.encode(node))]
            # A node that can take allocations now and could not before
            # unblocks blocked evaluations (PlansRpc, when composed).
            unblock = getattr(self, "unblock_for_node", None)
            if callable(unblock):
                unblock(node, table.decode_entry(old) if old else None, compares, ops)
            rev = await self.writer.commit(compares, ops, self.fence(context))
            return state_pb2.UpsertNodeResponse(index=rev)

        return await self._retry(attempt)

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
        await self.cache.sync()
        _, mod = self._config()
        if request.HasField("cas_index") and request.cas_index != mod:
            return state_pb2.SetSchedulerConfigResponse(updated=False, index=self.cache.revision)
        key = self.keys.key(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID)
        try:
            rev = await self.writer.commit([Compare(key, "mod", mod)],
                                           [Put(key, codec.encode(request.config))],
                                           self.fence(context))
        except Conflict:
            if request.HasField("cas_index"):
                return state_pb2.SetSchedulerConfigResponse(updated=False,
                                                            index=self.cache.revision)
            raise
        return state_pb2.SetSchedulerConfigResponse(updated=True, index=rev)

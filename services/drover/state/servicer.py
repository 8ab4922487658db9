"""The StateService gRPC servicer: thin, one line per RPC.

The only module of the state service that sees a gRPC context: each RPC
hands its request (and, for a write, the call's :class:`Caller`: its
metadata) to the family that owns it; the families get what they use
(the cache, the reader, the write pipeline ...) in their constructors,
from the wiring in :mod:`drover.state.app`. Every Get/List/Count is
answered by :class:`~drover.state.queries.Queries` with its row of
:data:`drover.state.core.query_specs.QUERIES`; Subscribe streams from the
:class:`~drover.state.subscribe.Hub`. Errors are raised as the service's
own (:mod:`drover.state.errors`, rooted in :mod:`drover.errors`) and become
a gRPC status with ErrorInfo in the one module that maps them
(:mod:`drover.rpc.errors`, through the server's interceptor).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from drover.acl.topics import event_reader
from drover.api.acl.v1 import acl_pb2_grpc
from drover.api.state.v1 import state_pb2_grpc
from drover.rpc.acl import current_identity
from drover.rpc.encoded import with_encoded
from drover.state.acl.admin import AclAdmin
from drover.state.allocations.plans import PlansRpc
from drover.state.allocations.rpcs import AllocationsRpc
from drover.state.core.query_specs import BY_RPC
from drover.state.deployments.rpcs import DeploymentUpdateRpc
from drover.state.evaluations.rpcs import EvaluationsRpc
from drover.state.gc import GarbageCollectRpc
from drover.state.jobs.rpcs import JobsRpc
from drover.state.nodes.drain import NodeDrainRpc
from drover.state.nodes.rpcs import NodesRpc
from drover.state.nodes.status import NodeStatusRpc
from drover.state.pipeline import Caller
from drover.state.queries import Queries
from drover.state.scheduler_config.rpcs import SchedulerConfigRpc
from drover.state.subscribe import Hub

#: Adds the servicer to a server; Subscribe's responses arrive serialized
#: (each event is encoded once per change for every subscriber, see
#: :mod:`drover.state.subscribe`).
add_state_servicer = with_encoded(state_pb2_grpc.add_StateServiceServicer_to_server,
                                  ("Subscribe",))


def caller(context: Any) -> Caller:
    """What a write needs of its call besides the request: the metadata."""
    return Caller(tuple(context.invocation_metadata() or ())) if context is not None else Caller()


class StateServicer(state_pb2_grpc.StateServiceServicer):
    def __init__(
        self, *, queries: Queries, jobs: JobsRpc, evaluations: EvaluationsRpc,
        allocations: AllocationsRpc,
        nodes: NodesRpc, scheduler_config: SchedulerConfigRpc,
        deployment_updates: DeploymentUpdateRpc, gc: GarbageCollectRpc,
        node_status: NodeStatusRpc, plans: PlansRpc, hub: Hub,
        node_drain: NodeDrainRpc,
    ) -> None:
        self._queries = queries
        self._jobs, self._evaluations = jobs, evaluations
        self._allocations = allocations
        self._nodes, self._scheduler_config = nodes, scheduler_config
        self._deployment_updates, self._gc = deployment_updates, gc
        self._node_status, self._plans = node_status, plans
        self.hub = hub
        self._node_drain = node_drain

    # -- reads ------------------------------------------------------------

    async def GetJob(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetJob"], request)

    async def ListJobs(self, request: Any, context: Any) -> Any:
        return await self._queries.list_page(BY_RPC["ListJobs"], request)

    async def ListJobVersions(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["ListJobVersions"], request)

    async def GetJobSnapshot(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetJobSnapshot"], request)

    async def GetEvaluation(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetEvaluation"], request)

    async def ListEvaluations(self, request: Any, context: Any) -> Any:
        return await self._queries.list_page(BY_RPC["ListEvaluations"], request)

    async def CountEvaluations(self, request: Any, context: Any) -> Any:
        return await self._queries.count(BY_RPC["CountEvaluations"], request)

    async def GetDeployment(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetDeployment"], request)

    async def ListDeployments(self, request: Any, context: Any) -> Any:
        return await self._queries.list_page(BY_RPC["ListDeployments"], request)

    async def GetAllocation(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetAllocation"], request)

    async def ListAllocations(self, request: Any, context: Any) -> Any:
        return await self._queries.list_page(BY_RPC["ListAllocations"], request)

    async def GetNode(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetNode"], request)

    async def ListNodes(self, request: Any, context: Any) -> Any:
        return await self._queries.list_page(BY_RPC["ListNodes"], request)

    async def GetSchedulerConfig(self, request: Any, context: Any) -> Any:
        return await self._queries.get(BY_RPC["GetSchedulerConfig"], request)

    # -- writes -----------------------------------------------------------

    async def RegisterJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.register(request, caller(context))

    async def DeregisterJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.deregister(request, caller(context))

    async def StartJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.start(request, caller(context))

    async def RevertJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.revert(request, caller(context))

    async def ScaleJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.scale(request, caller(context))

    async def StopAllocation(self, request: Any, context: Any) -> Any:
        return await self._jobs.stop_allocation(request, caller(context))

    async def PlanJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.plan(request, caller(context))

    async def UpsertEvaluations(self, request: Any, context: Any) -> Any:
        return await self._evaluations.upsert(request, caller(context))

    async def DeleteEvaluations(self, request: Any, context: Any) -> Any:
        return await self._evaluations.delete(request, caller(context))

    async def UpdateEvaluations(self, request: Any, context: Any) -> Any:
        return await self._evaluations.update(request, caller(context))

    async def UpsertAllocations(self, request: Any, context: Any) -> Any:
        return await self._allocations.upsert_allocations(request, caller(context))

    async def UpdateAllocations(self, request: Any, context: Any) -> Any:
        return await self._allocations.update_allocations(request, caller(context))

    async def UpsertNode(self, request: Any, context: Any) -> Any:
        return await self._nodes.upsert_node(request, caller(context))

    async def SetSchedulerConfig(self, request: Any, context: Any) -> Any:
        return await self._scheduler_config.set(request, caller(context))

    async def UpdateDeployment(self, request: Any, context: Any) -> Any:
        return await self._deployment_updates.update(request, caller(context))

    async def GarbageCollect(self, request: Any, context: Any) -> Any:
        return await self._gc.collect(request, caller(context))

    async def UpdateNodeStatus(self, request: Any, context: Any) -> Any:
        return await self._node_status.update_status(request, caller(context))

    async def ReapMissedHeartbeats(self, request: Any, context: Any) -> Any:
        return await self._node_status.reap_missed_heartbeats(request, caller(context))

    async def HeartbeatNodes(self, request: Any, context: Any) -> Any:
        return await self._node_status.heartbeat_nodes(request, caller(context))

    async def UpdateNodeDrain(self, request: Any, context: Any) -> Any:
        return await self._node_drain.update_drain(request, caller(context))

    async def UpdateAllocDesiredTransition(self, request: Any, context: Any) -> Any:
        return await self._node_drain.update_desired_transitions(request, caller(context))

    async def SubmitPlan(self, request: Any, context: Any) -> Any:
        return await self._plans.submit(request, caller(context))

    # -- stream -----------------------------------------------------------

    async def Subscribe(  # type: ignore[override]
        self, request: Any, context: Any
    ) -> AsyncIterator[bytes]:
        async for resp in self.hub.subscribe(request, event_reader(current_identity())):
            yield resp


class AclServicer(acl_pb2_grpc.AclServiceServicer):
    """The AclService every state replica hosts: one line per RPC, each
    handed to :class:`~drover.state.acl.admin.AclAdmin`."""

    def __init__(self, admin: AclAdmin) -> None:
        self.admin = admin

    async def Bootstrap(self, request: Any, context: Any) -> Any:
        return await self.admin.bootstrap(request)

    async def ApplyPolicy(self, request: Any, context: Any) -> Any:
        return await self.admin.apply_policy(request)

    async def ListPolicies(self, request: Any, context: Any) -> Any:
        return await self.admin.list_policies(request)

    async def DeletePolicy(self, request: Any, context: Any) -> Any:
        return await self.admin.delete_policy(request)

    async def CreateToken(self, request: Any, context: Any) -> Any:
        return await self.admin.create_token(request)

    async def ListTokens(self, request: Any, context: Any) -> Any:
        return await self.admin.list_tokens(request)

    async def RevokeToken(self, request: Any, context: Any) -> Any:
        return await self.admin.revoke_token(request)

    async def GetSelfToken(self, request: Any, context: Any) -> Any:
        return await self.admin.get_self_token(request)

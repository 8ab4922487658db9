"""The StateService gRPC servicer: thin, one object per RPC group.

Each RPC is a one-line method handing the call to its group; the groups get
what they use (the cache, the reader, :class:`~drover.state.write_calls.WriteCalls`
...) in their constructors, from the wiring in :mod:`drover.state.app`.
Every Get/List/Count is answered by :class:`~drover.state.queries.QueriesRpc`
(one row of :data:`drover.state.core.query_specs.QUERIES` each); the other
groups hold the writes; Subscribe streams from the :class:`~drover.state.subscribe.Hub`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from drover.acl.topics import event_reader
from drover.api.state.v1 import state_pb2_grpc
from drover.rpc.acl import current_identity
from drover.rpc.encoded import with_encoded
from drover.state.deployment_update import DeploymentUpdateRpc
from drover.state.eval_update import EvaluationUpdateRpc
from drover.state.evaluations import EvaluationsRpc
from drover.state.gc import GarbageCollectRpc
from drover.state.jobs import JobsRpc
from drover.state.node_drain import NodeDrainRpc
from drover.state.node_status import NodeStatusRpc
from drover.state.objects import ObjectsRpc
from drover.state.plans import PlansRpc
from drover.state.queries import QueriesRpc
from drover.state.subscribe import Hub

#: Adds the servicer to a server; Subscribe's responses arrive serialized
#: (each event is encoded once per change for every subscriber, see
#: :mod:`drover.state.subscribe`).
add_state_servicer = with_encoded(state_pb2_grpc.add_StateServiceServicer_to_server,
                                  ("Subscribe",))


class StateServicer(state_pb2_grpc.StateServiceServicer):
    def __init__(
        self, *, queries: QueriesRpc, jobs: JobsRpc, evaluations: EvaluationsRpc,
        evaluation_updates: EvaluationUpdateRpc, objects: ObjectsRpc,
        deployment_updates: DeploymentUpdateRpc, gc: GarbageCollectRpc,
        node_status: NodeStatusRpc, plans: PlansRpc, hub: Hub,
        node_drain: NodeDrainRpc,
    ) -> None:
        # Any: the query methods are installed on QueriesRpc from its rows.
        self._queries: Any = queries
        self._jobs, self._evaluations = jobs, evaluations
        self._evaluation_updates, self._objects = evaluation_updates, objects
        self._deployment_updates, self._gc = deployment_updates, gc
        self._node_status, self._plans = node_status, plans
        self.hub = hub
        self._node_drain = node_drain

    # -- reads ------------------------------------------------------------

    async def GetJob(self, request: Any, context: Any) -> Any:
        return await self._queries.GetJob(request, context)

    async def ListJobs(self, request: Any, context: Any) -> Any:
        return await self._queries.ListJobs(request, context)

    async def ListJobVersions(self, request: Any, context: Any) -> Any:
        return await self._queries.ListJobVersions(request, context)

    async def GetJobSnapshot(self, request: Any, context: Any) -> Any:
        return await self._queries.GetJobSnapshot(request, context)

    async def GetEvaluation(self, request: Any, context: Any) -> Any:
        return await self._queries.GetEvaluation(request, context)

    async def ListEvaluations(self, request: Any, context: Any) -> Any:
        return await self._queries.ListEvaluations(request, context)

    async def CountEvaluations(self, request: Any, context: Any) -> Any:
        return await self._queries.CountEvaluations(request, context)

    async def GetDeployment(self, request: Any, context: Any) -> Any:
        return await self._queries.GetDeployment(request, context)

    async def ListDeployments(self, request: Any, context: Any) -> Any:
        return await self._queries.ListDeployments(request, context)

    async def GetAllocation(self, request: Any, context: Any) -> Any:
        return await self._queries.GetAllocation(request, context)

    async def ListAllocations(self, request: Any, context: Any) -> Any:
        return await self._queries.ListAllocations(request, context)

    async def GetNode(self, request: Any, context: Any) -> Any:
        return await self._queries.GetNode(request, context)

    async def ListNodes(self, request: Any, context: Any) -> Any:
        return await self._queries.ListNodes(request, context)

    async def GetSchedulerConfig(self, request: Any, context: Any) -> Any:
        return await self._queries.GetSchedulerConfig(request, context)

    # -- writes -----------------------------------------------------------

    async def RegisterJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.RegisterJob(request, context)

    async def DeregisterJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.DeregisterJob(request, context)

    async def StartJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.StartJob(request, context)

    async def RevertJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.RevertJob(request, context)

    async def ScaleJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.ScaleJob(request, context)

    async def StopAllocation(self, request: Any, context: Any) -> Any:
        return await self._jobs.StopAllocation(request, context)

    async def PlanJob(self, request: Any, context: Any) -> Any:
        return await self._jobs.PlanJob(request, context)

    async def UpsertEvaluations(self, request: Any, context: Any) -> Any:
        return await self._evaluations.UpsertEvaluations(request, context)

    async def DeleteEvaluations(self, request: Any, context: Any) -> Any:
        return await self._evaluations.DeleteEvaluations(request, context)

    async def UpdateEvaluations(self, request: Any, context: Any) -> Any:
        return await self._evaluation_updates.UpdateEvaluations(request, context)

    async def UpsertAllocations(self, request: Any, context: Any) -> Any:
        return await self._objects.UpsertAllocations(request, context)

    async def UpdateAllocations(self, request: Any, context: Any) -> Any:
        return await self._objects.UpdateAllocations(request, context)

    async def UpsertNode(self, request: Any, context: Any) -> Any:
        return await self._objects.UpsertNode(request, context)

    async def SetSchedulerConfig(self, request: Any, context: Any) -> Any:
        return await self._objects.SetSchedulerConfig(request, context)

    async def UpdateDeployment(self, request: Any, context: Any) -> Any:
        return await self._deployment_updates.UpdateDeployment(request, context)

    async def GarbageCollect(self, request: Any, context: Any) -> Any:
        return await self._gc.GarbageCollect(request, context)

    async def UpdateNodeStatus(self, request: Any, context: Any) -> Any:
        return await self._node_status.UpdateNodeStatus(request, context)

    async def ReapMissedHeartbeats(self, request: Any, context: Any) -> Any:
        return await self._node_status.ReapMissedHeartbeats(request, context)

    async def HeartbeatNodes(self, request: Any, context: Any) -> Any:
        return await self._node_status.HeartbeatNodes(request, context)

    async def UpdateNodeDrain(self, request: Any, context: Any) -> Any:
        return await self._node_drain.UpdateNodeDrain(request, context)

    async def UpdateAllocDesiredTransition(self, request: Any, context: Any) -> Any:
        return await self._node_drain.UpdateAllocDesiredTransition(request, context)

    async def SubmitPlan(self, request: Any, context: Any) -> Any:
        return await self._plans.SubmitPlan(request, context)

    # -- stream -----------------------------------------------------------

    async def Subscribe(  # type: ignore[override]
        self, request: Any, context: Any
    ) -> AsyncIterator[bytes]:
        async for resp in self.hub.subscribe(request, event_reader(current_identity())):
            yield resp

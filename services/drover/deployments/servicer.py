"""The DeploymentWatcherService servicer: argument checks, leader routing.

Steering calls are leader only. A follower answers UNAVAILABLE (NotLeader)
with ``drover-leader: host:port`` (and ``drover-leader-term``) from the
election, naming only a leader that has established, so a client or the
proxy retries at the leader. GetWatcherStats answers on every replica
(``leader`` says which one is leading), since an operator asks it precisely
to find out what each replica is doing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.errors import InvalidArgument, NotLeader

from .core.manager import WatcherManager
from .leader import Result, WatcherLeader

#: The established leader to advertise: (address, term), or None.
LeaderHint = Callable[[], Awaitable[tuple[str, int] | None]]


def _require_id(request: Any) -> None:
    if not request.deployment_id:
        raise InvalidArgument("deployment_id is required", metadata={"field": "deployment_id"})


class DeploymentWatcherServicer(deployments_pb2_grpc.DeploymentWatcherServiceServicer):
    def __init__(self, leader: WatcherLeader, leader_hint: LeaderHint) -> None:
        self.leader = leader
        self.leader_hint = leader_hint

    async def _steer(self, request: Any, op: Callable[[WatcherManager], Any]) -> Result:
        _require_id(request)
        if not self.leader.leading:
            raise await self._refusal()
        try:
            return await self.leader.operate(request.namespace, request.deployment_id, op)
        except NotLeader as err:  # the term ended meanwhile: point at the leader
            if err.leader is not None:
                raise
            raise await self._refusal() from None

    async def _refusal(self) -> NotLeader:
        hint = await self.leader_hint()
        return NotLeader(self.leader.service, *(hint or (None, 0)))

    async def PromoteDeployment(self, request: Any, context: Any) -> Any:
        if request.all and request.groups:
            raise InvalidArgument("set either all or groups, not both",
                                  metadata={"field": "groups"})
        if not request.all and not request.groups:
            raise InvalidArgument("set all, or name the groups to promote",
                                  metadata={"field": "groups"})
        groups = None if request.all else list(request.groups)
        res = await self._steer(request, lambda m: m.promote(request.deployment_id, groups))
        return deployments_pb2.PromoteDeploymentResponse(result=res)

    async def PauseDeployment(self, request: Any, context: Any) -> Any:
        res = await self._steer(request, lambda m: m.pause(request.deployment_id, request.pause))
        return deployments_pb2.PauseDeploymentResponse(result=res)

    async def FailDeployment(self, request: Any, context: Any) -> Any:
        res = await self._steer(request, lambda m: m.fail(request.deployment_id))
        return deployments_pb2.FailDeploymentResponse(result=res)

    async def SetAllocHealth(self, request: Any, context: Any) -> Any:
        healthy = list(request.healthy_allocation_ids)
        unhealthy = list(request.unhealthy_allocation_ids)
        res = await self._steer(
            request, lambda m: m.set_alloc_health(request.deployment_id, healthy, unhealthy))
        return deployments_pb2.SetAllocHealthResponse(result=res)

    async def GetWatcherStats(self, request: Any, context: Any) -> Any:
        stats = self.leader.stats()
        out = deployments_pb2.GetWatcherStatsResponse(leader=stats.leader,
                                                      state_writes=stats.state_writes)
        if stats.watchers is not None:
            w = stats.watchers
            out.active_watchers = w.active_watchers
            out.subscriptions = w.subscriptions
            out.wakeups = w.wakeups
            out.evaluations_created = w.evaluations_created
        return out

    async def CollectGarbage(self, request: Any, context: Any) -> Any:
        if not self.leader.leading:
            raise await self._refusal()
        r = await self.leader.collect_garbage(force=request.force)
        return deployments_pb2.CollectGarbageResponse(
            evaluations=r.evaluations, allocations=r.allocations, deployments=r.deployments,
            jobs=r.jobs, job_versions=r.job_versions, nodes=r.nodes, examined=r.examined,
            txns=r.txns, largest_txn=r.largest_txn, duration_seconds=r.duration)

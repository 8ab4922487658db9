"""drover's own writers racing on one deployment never fail a user's call:
SetAllocHealth on some allocations while the nodes report the health of
the others and re-report the user's (each report moves the allocations
the user's call writes, and the deployment: the watcher writes it) is
OK for every call, the conflicts retried inside the state service. Real
etcd, the state service and the watcher served by DroverServer."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from deployments_harness import LEADER_CONFIG, Scheduler, Watcher, service_job

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2

SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
ALLOCS = 24
REPORTS = 3


async def test_set_alloc_health_racing_client_reports_and_the_watcher_never_conflicts(
        watcher: Watcher, scheduler: Scheduler) -> None:
    reg = await scheduler.register(service_job("race", count=ALLOCS, max_parallel=ALLOCS))
    d = await scheduler.deployment(reg.deployment_id)
    ids = await scheduler.place(d, ALLOCS)
    by_user, by_nodes = ids[::2], ids[1::2]

    async def user(alloc_id: str) -> object:
        return await watcher.stub.SetAllocHealth(deployments_pb2.SetAllocHealthRequest(
            deployment_id=d.id, healthy_allocation_ids=[alloc_id]), timeout=30)

    async def node(alloc_id: str) -> object:
        # a node reports its allocation, and again: every report is a write
        # of the allocation the user's call may be marking too
        for _ in range(REPORTS):
            await scheduler.health([alloc_id, *by_user])
        return None

    outcomes = await asyncio.gather(*(f(i) for pair in zip(by_user, by_nodes, strict=True)
                                      for f, i in ((user, pair[0]), (node, pair[1]))),
                                    return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert not failed, [f"{o.code().name}: {o.details()}" if isinstance(o, grpc.aio.AioRpcError)
                        else repr(o) for o in failed]
    await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL, within=20)


class RacingWriter:
    """The watcher leader's state API, with another writer of the deployment
    getting in first: before each of the leader's next ``races``
    UpdateDeployment calls, the same deployment is written (a real
    UpdateDeployment through the real state service, with the leader's own
    fence, as a second writer of drover's would), so the leader's write
    meets a genuine compare conflict in etcd."""

    def __init__(self, inner: Any, races: int) -> None:
        self._inner = inner
        self.races = races
        self.raced = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def update_deployment(self, request: state_pb2.UpdateDeploymentRequest,
                                fence: Any) -> state_pb2.UpdateDeploymentResponse:
        if self.raced < self.races:
            self.raced += 1
            d = request.deployment
            current = await self._inner.get_deployment(d.namespace, d.id)
            current.status_description = f"changed by another writer ({self.raced})"
            await self._inner.update_deployment(
                state_pb2.UpdateDeploymentRequest(deployment=current), fence)
        resp: state_pb2.UpdateDeploymentResponse = await self._inner.update_deployment(
            request, fence)
        return resp


async def _racing(watcher: Watcher, races: int) -> RacingWriter:
    leader = watcher.app.leader
    assert leader is not None
    racing = RacingWriter(leader.writer.state, races)
    leader.writer.state = racing
    return racing


async def test_a_call_whose_write_meets_another_writer_is_decided_again(
        watcher: Watcher, scheduler: Scheduler) -> None:
    """Issue 41: a conflict between drover's own writers never reaches a
    user. PauseDeployment's write meets a real conflict twice (another
    UpdateDeployment of the deployment got in first); the watcher re-reads
    it and decides the pause again: OK, and the deployment is paused. Was:
    ABORTED CONFLICT "deployment changed concurrently"."""
    reg = await scheduler.register(service_job("raced", count=2))
    d = await scheduler.deployment(reg.deployment_id)
    racing = await _racing(watcher, races=2)
    await watcher.stub.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
        deployment_id=d.id, pause=True), timeout=30)
    assert racing.raced == 2
    paused = await scheduler.deployment(d.id)
    assert paused.status == deployment_pb2.DEPLOYMENT_STATUS_PAUSED


async def test_past_the_bound_the_call_is_unavailable_never_conflict(
        watcher: Watcher, scheduler: Scheduler) -> None:
    """A write that meets another writer every time is decided again
    ``conflict_attempts`` times, then answered UNAVAILABLE (retry), not
    ABORTED CONFLICT."""
    reg = await scheduler.register(service_job("always-raced", count=2))
    d = await scheduler.deployment(reg.deployment_id)
    racing = await _racing(watcher, races=1000)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await watcher.stub.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
            deployment_id=d.id, pause=True), timeout=30)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value.details()
    assert "kept changing" in (info.value.details() or "")
    assert racing.raced == LEADER_CONFIG.conflict_attempts

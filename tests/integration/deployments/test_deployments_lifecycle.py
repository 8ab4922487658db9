"""Deployments driven end to end: real etcd, real state service, the watcher
served by DroverServer; the test places allocations and reports health."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from deployments_harness import (
    Scheduler,
    StateReplica,
    Watcher,
    reason_of,
    service_job,
    start_watcher,
)
from polling import eventually

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2

RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
PAUSED = deployment_pb2.DEPLOYMENT_STATUS_PAUSED
FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED
SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL


async def test_canaries_promote_then_all_healthy_succeeds(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    reg = await scheduler.register(service_job("shop", count=2, canary=1, max_parallel=2))
    d = await scheduler.deployment(reg.deployment_id)
    [canary] = await scheduler.place(d, 1, canary=True)
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].placed_allocs == 1)

    promote = deployments_pb2.PromoteDeploymentRequest(deployment_id=d.id, all=True)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await watcher.stub.PromoteDeployment(promote)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(err.value) == "CANARIES_UNHEALTHY"
    assert err.value.details() == "task group web has 0/1 healthy canaries"

    await scheduler.health([canary])
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].healthy_allocs == 1)
    resp = await watcher.stub.PromoteDeployment(promote)
    assert resp.result.deployment.task_groups["web"].promoted
    ev = await state.stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=resp.result.eval_id))
    assert ev.evaluation.triggered_by == "deployment-watcher"
    assert ev.evaluation.deployment_id == d.id

    rest = await scheduler.place(d, 1)  # the promoted canary counts towards the 2
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].placed_allocs == 2)
    assert (await scheduler.deployment(d.id)).status == RUNNING
    await scheduler.health(rest)
    done = await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL)
    assert done.status_description == "Deployment completed successfully"
    assert done.task_groups["web"].healthy_allocs == 2
    job = await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="shop"))
    assert job.job.stable and job.job.version == reg.version
    stats = await watcher.stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())
    assert stats.leader and stats.subscriptions == 2 and stats.active_watchers == 0
    assert stats.evaluations_created >= 1 and stats.state_writes >= 3


async def test_unhealthy_allocation_fails_and_reverts(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    reg0 = await scheduler.register(service_job("api", count=1, auto_revert=True))
    d0 = await scheduler.deployment(reg0.deployment_id)
    await scheduler.health(await scheduler.place(d0, 1))
    await scheduler.wait_deployment(d0.id, lambda x: x.status == SUCCESSFUL)

    v1 = service_job("api", count=1, auto_revert=True, image="web:2")
    v1.task_groups[0].update.progress_deadline.FromSeconds(0)  # fail on the first unhealthy
    reg1 = await scheduler.register(v1)
    d1 = await scheduler.deployment(reg1.deployment_id)
    [bad] = await scheduler.place(d1, 1)
    await scheduler.wait_deployment(d1.id, lambda x: x.task_groups["web"].placed_allocs == 1)
    resp = await watcher.stub.SetAllocHealth(deployments_pb2.SetAllocHealthRequest(
        namespace="default", deployment_id=d1.id, unhealthy_allocation_ids=[bad]))
    assert resp.result.HasField("reverted_job_version")
    assert resp.result.reverted_job_version == 0
    assert resp.result.eval_id
    failed = await scheduler.deployment(d1.id)
    assert failed.status == FAILED
    assert failed.status_description == (
        "Failed due to unhealthy allocations - rolling back to job version 0")
    job = (await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="api"))).job
    assert job.version == 2
    assert job.task_groups[0].tasks[0].config["image"] == "web:1"
    alloc = await state.stub.GetAllocation(state_pb2.GetAllocationRequest(
        namespace="default", id=bad))
    assert alloc.allocation.deployment_status.healthy is False


async def test_client_reported_unhealthy_fails_without_revert_target(
    watcher: Watcher, scheduler: Scheduler
) -> None:
    job = service_job("solo", count=1, auto_revert=True)
    job.task_groups[0].update.progress_deadline.FromSeconds(0)  # fail on the first unhealthy
    reg = await scheduler.register(job)
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.health(await scheduler.place(d, 1), healthy=False)
    failed = await scheduler.wait_deployment(d.id, lambda x: x.status == FAILED)
    assert failed.status_description == (
        "Failed due to unhealthy allocations - no stable job version to auto revert to")


async def test_missed_progress_deadline_fails(watcher: Watcher, scheduler: Scheduler) -> None:
    reg = await scheduler.register(service_job("slow", count=1, progress_deadline=1.0))
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.place(d, 1)
    armed = await scheduler.wait_deployment(
        d.id, lambda x: x.task_groups["web"].HasField("require_progress_by"))
    assert armed.status == RUNNING
    failed = await scheduler.wait_deployment(d.id, lambda x: x.status == FAILED, within=4.0)
    assert failed.status_description == "Failed due to progress deadline of task group web"


async def test_pause_stops_the_deadline_and_resume_creates_an_evaluation(
    watcher: Watcher, scheduler: Scheduler
) -> None:
    reg = await scheduler.register(service_job("calm", count=1, progress_deadline=1.0))
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.place(d, 1)
    await scheduler.wait_deployment(
        d.id, lambda x: x.task_groups["web"].HasField("require_progress_by"))
    paused = await watcher.stub.PauseDeployment(
        deployments_pb2.PauseDeploymentRequest(deployment_id=d.id, pause=True))
    assert paused.result.deployment.status == PAUSED
    assert not paused.result.deployment.task_groups["web"].HasField("require_progress_by")
    await asyncio.sleep(1.5)  # well past the old deadline
    still = await scheduler.deployment(d.id)
    assert still.status == PAUSED and still.status_description == "Deployment is paused"

    resumed = await watcher.stub.PauseDeployment(
        deployments_pb2.PauseDeploymentRequest(deployment_id=d.id, pause=False))
    assert resumed.result.deployment.status == RUNNING and resumed.result.eval_id
    assert resumed.result.deployment.task_groups["web"].HasField("require_progress_by")


async def test_fail_deployment_by_operator(watcher: Watcher, scheduler: Scheduler) -> None:
    reg = await scheduler.register(service_job("manual", count=1))
    resp = await watcher.stub.FailDeployment(
        deployments_pb2.FailDeploymentRequest(deployment_id=reg.deployment_id))
    assert resp.result.deployment.status == FAILED and resp.result.eval_id
    stored = await scheduler.deployment(reg.deployment_id)
    assert stored.status_description == "Deployment marked as failed"


async def test_failover_mid_deployment_continues(
    watcher: Watcher, watchers: list[Watcher], scheduler: Scheduler,
    etcd_endpoint: str, etcd_prefix: str, state: StateReplica,
) -> None:
    second = await start_watcher(etcd_endpoint, etcd_prefix, state.address)
    watchers.append(second)
    reg = await scheduler.register(service_job("move", count=2, max_parallel=1))
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.health(await scheduler.place(d, 1))
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].healthy_allocs == 1)
    assert not second.app.leader or not second.app.leader.leading

    await watcher.close()  # resigns: the follower takes over at once
    watchers.remove(watcher)
    await eventually(lambda: second.app.leader is not None and second.app.leader.leading,
                   within=4.0, what="the second replica to lead")
    await scheduler.health(await scheduler.place(d, 1))
    done = await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL)
    assert done.task_groups["web"].healthy_allocs == 2
    stats = await second.stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())
    assert stats.leader and stats.subscriptions == 2

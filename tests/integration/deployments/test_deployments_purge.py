"""Purge means gone: a purged job's versions, deployments (their watchers
stop), evaluations and allocations are removed in bounded txns, and the
response says what was removed. A plain deregister keeps the history."""

from __future__ import annotations

import grpc
import pytest
from deployments_harness import Scheduler, StateReplica, Watcher, service_job
from polling import eventually

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2, job_pb2


async def count(state: StateReplica, what: str, job_id: str) -> int:
    flt = f'job_id == "{job_id}"'
    if what == "evaluations":
        return int((await state.stub.CountEvaluations(
            state_pb2.CountEvaluationsRequest(filter=flt))).count)
    if what == "allocations":
        resp = await state.stub.ListAllocations(
            state_pb2.ListAllocationsRequest(filter=flt, page_size=1000))
        return len(resp.allocations)
    resp2 = await state.stub.ListDeployments(
        state_pb2.ListDeploymentsRequest(filter=flt, page_size=1000))
    return len(resp2.deployments)


async def watchers_active(watcher: Watcher, n: int) -> bool:
    s = await watcher.stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())
    return int(s.active_watchers) == n


async def test_purge_with_an_active_deployment_stops_its_watcher(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    await scheduler.register(service_job("shop", count=3, image="web:1"))
    reg = await scheduler.register(service_job("shop", count=3, canary=1, image="web:2"))
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.place(d, 2)
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].placed_allocs == 2)
    other = await scheduler.register(service_job("other", count=1))  # must survive
    await eventually(lambda: watchers_active(watcher, 2), what="two watchers")

    resp = await state.stub.DeregisterJob(
        state_pb2.DeregisterJobRequest(namespace="default", id="shop", purge=True))
    assert (resp.purged_versions, resp.purged_deployments, resp.purged_evaluations,
            resp.purged_allocations) == (2, 2, 2, 2)
    assert resp.purge_txns == 1 and resp.eval_id == ""
    for what in ("evaluations", "allocations", "deployments"):
        assert await count(state, what, "shop") == 0, what
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="shop"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await state.stub.ListJobVersions(
            state_pb2.ListJobVersionsRequest(namespace="default", id="shop"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND

    await eventually(lambda: watchers_active(watcher, 1),
                   what="the purged deployment's watcher to stop")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await watcher.stub.PauseDeployment(
            deployments_pb2.PauseDeploymentRequest(deployment_id=d.id, pause=True))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert await count(state, "deployments", "other") == 1
    kept = await scheduler.deployment(other.deployment_id)
    assert kept.status == deployment_pb2.DEPLOYMENT_STATUS_RUNNING
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await state.stub.DeregisterJob(
            state_pb2.DeregisterJobRequest(namespace="default", id="shop", purge=True))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_purge_of_more_versions_than_one_txn_holds(state: StateReplica) -> None:
    job = job_pb2.Job(id="cron", namespace="default", type=job_pb2.JOB_TYPE_BATCH,
                      datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(name="run", count=1)])
    for i in range(130):  # 130 evaluations (the versions: Nomad's 6 tracked ones)
        job.meta["v"] = str(i)  # a changed spec: an unchanged one makes no new version
        await state.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    resp = await state.stub.DeregisterJob(
        state_pb2.DeregisterJobRequest(namespace="default", id="cron", purge=True))
    assert resp.purged_versions == 6 and resp.purged_evaluations == 130
    assert resp.purge_txns == 2  # pages of 120 objects, the job in the last
    assert await count(state, "evaluations", "cron") == 0
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await state.stub.ListJobVersions(
            state_pb2.ListJobVersionsRequest(namespace="default", id="cron"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_deregister_without_purge_stops_the_job_and_keeps_history(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    reg = await scheduler.register(service_job("shop", count=2))
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.place(d, 1)
    resp = await state.stub.DeregisterJob(
        state_pb2.DeregisterJobRequest(namespace="default", id="shop"))
    assert resp.eval_id and resp.purged_versions == resp.purged_evaluations == 0
    job = await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="shop"))
    assert job.job.stop and job.job.version == 1
    versions = await state.stub.ListJobVersions(
        state_pb2.ListJobVersionsRequest(namespace="default", id="shop"))
    assert [v.version for v in versions.versions] == [1, 0]
    assert await count(state, "evaluations", "shop") == 2
    assert await count(state, "allocations", "shop") == 1
    assert await count(state, "deployments", "shop") == 1

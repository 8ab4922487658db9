"""Bad input and routing: unknown, inactive, follower, and UpdateDeployment's
own refusals (stale deployment, lost fence), against real services."""

from __future__ import annotations

import grpc
import pytest
from deployments_harness import (
    Scheduler,
    StateReplica,
    Watcher,
    leader_fence,
    reason_of,
    service_job,
    start_watcher,
)

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2
from drover.coord import Fence
from drover.rpc.remote import leader_hint

SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL


async def rpc_error(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # type: ignore[misc]
    return err.value


async def test_unknown_deployment_is_not_found(watcher: Watcher) -> None:
    err = await rpc_error(watcher.stub.FailDeployment(
        deployments_pb2.FailDeploymentRequest(deployment_id="nope")))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert reason_of(err) == "DEPLOYMENT_NOT_FOUND"
    assert err.details() == "deployment nope not found in namespace default"


async def test_inactive_deployment_is_failed_precondition(
    watcher: Watcher, scheduler: Scheduler
) -> None:
    reg = await scheduler.register(service_job("done", count=1))
    d = await scheduler.deployment(reg.deployment_id)
    await scheduler.health(await scheduler.place(d, 1))
    await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL)
    err = await rpc_error(watcher.stub.PauseDeployment(
        deployments_pb2.PauseDeploymentRequest(deployment_id=d.id, pause=True)))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(err) == "DEPLOYMENT_NOT_ACTIVE"
    assert err.details() == (
        f"deployment {d.id} is not active (DEPLOYMENT_STATUS_SUCCESSFUL)")


async def test_bad_arguments(watcher: Watcher, scheduler: Scheduler) -> None:
    reg = await scheduler.register(service_job("args", count=1))
    err = await rpc_error(watcher.stub.PromoteDeployment(
        deployments_pb2.PromoteDeploymentRequest(deployment_id=reg.deployment_id)))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == "set all, or name the groups to promote"
    err = await rpc_error(watcher.stub.PromoteDeployment(
        deployments_pb2.PromoteDeploymentRequest(deployment_id=reg.deployment_id,
                                                 groups=["db"])))
    assert reason_of(err) == "UNKNOWN_TASK_GROUP"
    err = await rpc_error(watcher.stub.SetAllocHealth(deployments_pb2.SetAllocHealthRequest(
        deployment_id=reg.deployment_id, healthy_allocation_ids=["not-mine"])))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason_of(err) == "ALLOCATION_NOT_IN_DEPLOYMENT"
    err = await rpc_error(watcher.stub.FailDeployment(deployments_pb2.FailDeploymentRequest()))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == "deployment_id is required"


async def test_follower_answers_with_the_leader_hint(
    watcher: Watcher, watchers: list[Watcher], scheduler: Scheduler,
    etcd_endpoint: str, etcd_prefix: str, state: StateReplica,
) -> None:
    follower = await start_watcher(etcd_endpoint, etcd_prefix, state.address)
    watchers.append(follower)
    reg = await scheduler.register(service_job("hint", count=1))
    err = await rpc_error(follower.stub.FailDeployment(
        deployments_pb2.FailDeploymentRequest(deployment_id=reg.deployment_id)))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert reason_of(err) == "NOT_LEADER"
    assert leader_hint(err) == watcher.address
    stats = await follower.stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())
    assert not stats.leader and stats.active_watchers == 0


async def test_anonymous_update_deployment_is_refused_and_stores_nothing(
    state: StateReplica, scheduler: Scheduler
) -> None:
    """The issue's attack: SUCCESSFUL + stable_job_version without a fence."""
    reg = await scheduler.register(service_job("anon", count=1))
    d = await scheduler.deployment(reg.deployment_id)
    d.status = SUCCESSFUL
    before = (await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                                id="anon"))).meta.index
    err = await rpc_error(state.stub.UpdateDeployment(
        state_pb2.UpdateDeploymentRequest(deployment=d, stable_job_version=0)))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(err) == "FENCE_REQUIRED"
    job = await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="anon"))
    assert not job.job.stable and job.meta.index == before
    version = await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                              id="anon", version=0))
    assert not version.job.stable
    after = await scheduler.deployment(d.id)
    assert after.status != SUCCESSFUL and after.modify_index == d.modify_index


async def test_update_deployment_refuses_a_stale_value_and_a_lost_fence(
    state: StateReplica, scheduler: Scheduler
) -> None:
    reg = await scheduler.register(service_job("raw", count=1))
    d = await scheduler.deployment(reg.deployment_id)
    stale = deployment_pb2.Deployment()
    stale.CopyFrom(d)
    stale.modify_index = d.modify_index - 1
    fenced = await leader_fence(state)
    err = await rpc_error(state.stub.UpdateDeployment(
        state_pb2.UpdateDeploymentRequest(deployment=stale), metadata=fenced))
    assert err.code() == grpc.StatusCode.ABORTED
    assert reason_of(err) == "DEPLOYMENT_CHANGED"

    fence = Fence(f"{state.service.cache.keys.base}election/deployments/nobody", 7)
    err = await rpc_error(state.stub.UpdateDeployment(
        state_pb2.UpdateDeploymentRequest(deployment=d), metadata=fence.metadata()))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(err) == "FENCE_LOST"
    assert (await scheduler.deployment(d.id)).modify_index == d.modify_index

    err = await rpc_error(state.stub.UpdateDeployment(state_pb2.UpdateDeploymentRequest(
        deployment=d, allocation_updates=[state_pb2.AllocationUpdate(id="ghost",
                                                                     healthy=True)]),
        metadata=fenced))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert err.details() == "allocation 'ghost' not found in namespace 'default'"


async def test_update_deployment_marks_stable_and_skips_a_revert_the_user_overtook(
    state: StateReplica, scheduler: Scheduler
) -> None:
    reg = await scheduler.register(service_job("raw2", count=1))
    d = await scheduler.deployment(reg.deployment_id)
    d.status = SUCCESSFUL
    job = (await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                            id="raw2"))).job
    req = state_pb2.UpdateDeploymentRequest(deployment=d, stable_job_version=0,
                                            revert_job=job,
                                            revert_expected_job_modify_index=1)
    resp = await state.stub.UpdateDeployment(req, metadata=await leader_fence(state))
    assert not resp.HasField("reverted_job_version")  # the job's index is not 1
    after = (await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                              id="raw2"))).job
    assert after.stable and after.version == 0
    assert after.job_modify_index == job.job_modify_index  # stability is not a spec change
    version = await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                              id="raw2", version=0))
    assert version.job.stable

"""Allocation lifecycle against a real etcd and state service: a stopped
canary no longer counts for promotion, and a promotion clears the canary flag in state."""

from __future__ import annotations

import grpc
import pytest
from deployments_harness import Scheduler, StateReplica, Watcher, reason_of, service_job

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, deployment_pb2

SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL


async def stop(state: StateReplica, alloc_id: str) -> None:
    """What a scheduler then client do to a stopped allocation (desired STOP,
    client COMPLETE); its reported health stays as it was."""
    got = await state.stub.GetAllocation(
        state_pb2.GetAllocationRequest(namespace="default", id=alloc_id))
    a = got.allocation
    a.desired_status = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
    await state.stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[a]))


async def promote_error(watcher: Watcher, deployment_id: str) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await watcher.stub.PromoteDeployment(
            deployments_pb2.PromoteDeploymentRequest(deployment_id=deployment_id, all=True))
    return err.value


@pytest.mark.parametrize(("wanted", "message"), [
    (2, "task group web has 0/2 healthy canaries"),
    (1, "task group web has 0/1 healthy canaries"),
])
async def test_a_stopped_healthy_canary_does_not_count_for_promotion(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica, wanted: int, message: str
) -> None:
    reg = await scheduler.register(service_job("shop", count=3, canary=wanted))
    d = await scheduler.deployment(reg.deployment_id)
    canaries = await scheduler.place(d, wanted, canary=True)
    await scheduler.health(canaries[:1])
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].healthy_allocs == 1)
    await stop(state, canaries[0])
    # Dropped from the canaries; its health report still counts (Nomad's
    # updateDeploymentWithAlloc accumulates; was: healthy_allocs back to 0).
    after = await scheduler.wait_deployment(
        d.id, lambda x: list(x.task_groups["web"].placed_canaries) == canaries[1:],
        what="stopped canary dropped")
    assert after.task_groups["web"].healthy_allocs == 1
    err = await promote_error(watcher, d.id)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(err) == "CANARIES_UNHEALTHY"
    assert err.details() == message
    assert not (await scheduler.deployment(d.id)).task_groups["web"].promoted


async def test_promotion_clears_the_canary_flag_in_state(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    reg = await scheduler.register(service_job("shop", count=3, canary=2, max_parallel=2))
    d = await scheduler.deployment(reg.deployment_id)
    canaries = await scheduler.place(d, 2, canary=True)
    await scheduler.health(canaries)
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].healthy_allocs == 2)
    resp = await watcher.stub.PromoteDeployment(
        deployments_pb2.PromoteDeploymentRequest(deployment_id=d.id, all=True))
    assert resp.result.deployment.task_groups["web"].promoted
    for alloc_id in canaries:
        got = await state.stub.GetAllocation(
            state_pb2.GetAllocationRequest(namespace="default", id=alloc_id))
        assert not got.allocation.deployment_status.canary
        assert got.allocation.deployment_status.healthy
    # Still listed as the group's placed canaries, still counted healthy.
    rest = await scheduler.place(d, 1)
    await scheduler.health(rest)
    done = await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL, what="success")
    assert sorted(done.task_groups["web"].placed_canaries) == sorted(canaries)
    assert done.task_groups["web"].healthy_allocs == 3

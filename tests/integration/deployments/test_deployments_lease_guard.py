"""A watcher leader past its lease clock steers nothing and points at the new leader.

In process: the leader's guard clock jumps an hour ahead, what a process
sees when it wakes from a freeze past its lease, before its keepalive task
has run. The steering call is refused (UNAVAILABLE, NOT_LEADER, with the
``drover-leader`` hint once the other replica leads), nothing is written,
and the new leader serves it.
"""

from __future__ import annotations

import grpc
import pytest
from deployments_harness import Scheduler, StateReplica, Watcher, service_job, start_watcher
from polling import eventually

from drover.api.deployments.v1 import deployments_pb2
from drover.api.types.v1 import deployment_pb2
from drover.rpc.remote import error_info


def _hint(err: grpc.aio.AioRpcError) -> str | None:
    for key, value in err.trailing_metadata() or ():
        if key == "drover-leader":
            return str(value)
    return None


@pytest.mark.slow
async def test_a_watcher_past_its_lease_clock_refuses_to_steer(
    watcher: Watcher, watchers: list[Watcher], scheduler: Scheduler,
    etcd_endpoint: str, etcd_prefix: str, state: StateReplica,
) -> None:
    second = await start_watcher(etcd_endpoint, etcd_prefix, state.address)
    watchers.append(second)
    reg = await scheduler.register(service_job("frozen", count=2))
    before = await scheduler.deployment(reg.deployment_id)
    leader = watcher.app.leader
    assert leader is not None
    guard = leader.guard
    real = guard._clock
    guard._clock = lambda: real() + 3600.0
    try:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await watcher.stub.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
                deployment_id=reg.deployment_id, pause=True), timeout=10)
    finally:
        guard._clock = real
    err = caught.value
    assert err.code() == grpc.StatusCode.UNAVAILABLE, err.details()
    info = error_info(err)
    assert info is not None and info.reason == "NOT_LEADER"
    after = await scheduler.deployment(reg.deployment_id)
    assert after.status == deployment_pb2.DEPLOYMENT_STATUS_RUNNING
    assert after.modify_index == before.modify_index  # nothing was written
    # The term was ended by the failed check; the other replica takes over.
    await eventually(lambda: second.app.leader is not None and second.app.leader.leading,
                   within=6.0, what="the second replica to lead")

    async def hints_the_second() -> bool:
        # The deposed replica learns of the new leader from the election key
        # once that leader has established; until then it names nobody.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await watcher.stub.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
                deployment_id=reg.deployment_id, pause=True), timeout=10)
        hint = _hint(caught.value)
        assert hint in (None, second.address), hint
        return hint == second.address

    await eventually(hints_the_second, within=6.0, what="the deposed replica to hint the leader")
    resp = await second.stub.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
        deployment_id=reg.deployment_id, pause=True), timeout=10)
    assert resp.result.deployment.status == deployment_pb2.DEPLOYMENT_STATUS_PAUSED

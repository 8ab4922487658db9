"""UpdateNodeDrain and UpdateAllocDesiredTransition against a real etcd: an
operator starts and cancels drains; the drainer's writes need its fence."""

from __future__ import annotations

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import job_pb2, node_pb2
from drover.rpc.remote import error_info


async def _node(stub) -> None:
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
        id="n1", status=node_pb2.NODE_STATUS_READY,
        scheduling_eligibility=node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE,
        resources=job_pb2.Resources(cpu=1000, memory_mb=1000))))


async def test_a_drain_starts_is_cancelled_and_enabling_a_draining_node_is_refused(
        replica) -> None:
    stub = replica.stub
    await _node(stub)
    req = state_pb2.UpdateNodeDrainRequest(id="n1")
    req.drain_strategy.deadline.FromSeconds(60)
    await stub.UpdateNodeDrain(req)
    n = (await stub.GetNode(state_pb2.GetNodeRequest(id="n1"))).node
    assert n.drain and n.HasField("drain_strategy")
    assert n.scheduling_eligibility == node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
            id="n1", scheduling_eligibility=node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await stub.UpdateNodeDrain(state_pb2.UpdateNodeDrainRequest(id="n1", mark_eligible=True))
    n = (await stub.GetNode(state_pb2.GetNodeRequest(id="n1"))).node
    assert not n.drain and n.last_drain.status == node_pb2.DRAIN_STATUS_CANCELED
    assert n.scheduling_eligibility == node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE


async def test_the_drainers_writes_need_a_fence(replica) -> None:
    stub = replica.stub
    await _node(stub)
    for call, request in (
        (stub.UpdateNodeDrain, state_pb2.UpdateNodeDrainRequest(id="n1", complete=True)),
        (stub.UpdateAllocDesiredTransition, state_pb2.UpdateAllocDesiredTransitionRequest(
            allocations=[state_pb2.AllocTransition(namespace="default", id="a1")])),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(request)
        info = error_info(err.value)
        assert info is not None and info.reason == "FENCE_REQUIRED", info


async def test_a_force_drain_is_accepted(replica) -> None:
    """Nomad's negative deadline is `force` (a negative duration is refused)."""
    stub = replica.stub
    await _node(stub)
    req = state_pb2.UpdateNodeDrainRequest(id="n1")
    req.drain_strategy.force = True
    await stub.UpdateNodeDrain(req)
    n = (await stub.GetNode(state_pb2.GetNodeRequest(id="n1"))).node
    assert n.drain_strategy.force and not n.drain_strategy.HasField("force_deadline")

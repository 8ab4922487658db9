"""A leader past its lease clock serves nothing, before it even knows it lost.

In process: the leader's guard clock is moved an hour ahead, which is what a
process sees when it wakes from a freeze past its lease (the keepalive task
has not run yet, the term is not revoked, the writer is still there). The
real-process version (SIGSTOP/SIGCONT) is test_broker_frozen_leader_procs.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from broker_cluster import Cluster, dequeue, make_eval
from polling import eventually

from drover.api.broker.v1 import broker_pb2
from drover.rpc.remote import error_info


def _leader_hint(err: grpc.aio.AioRpcError) -> str | None:
    for key, value in err.trailing_metadata() or ():
        if key == "drover-leader":
            return str(value)
    return None


@pytest.mark.slow
async def test_a_long_poll_is_not_served_past_the_lease_clock(cluster: Cluster) -> None:
    leader = await cluster.leader()
    other = cluster.follower_of(leader)
    runtime = leader.app.runtime
    poll = asyncio.create_task(dequeue(leader, poll=8.0))

    async def parked() -> bool:
        return len(runtime.polls) == 1

    await eventually(parked, what="the long poll to park")
    real = runtime.guard._clock
    runtime.guard._clock = lambda: real() + 3600.0  # woken from a long freeze
    try:
        await cluster.upsert(make_eval("late"))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await poll
    finally:
        runtime.guard._clock = real
    err = caught.value
    assert err.code() == grpc.StatusCode.UNAVAILABLE, err.details()
    info = error_info(err)
    assert info is not None and info.reason == "NOT_LEADER"
    assert _leader_hint(err) == other.address
    # Nothing was handed out by the old term: the new leader delivers it first.
    new = await cluster.leader(exclude=leader)
    assert new is other
    got = await dequeue(new)
    assert got.evaluation.id == "late"
    stats = (await new.stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest())).stats
    assert stats.total_unacked == 1


@pytest.mark.slow
async def test_worker_calls_past_the_lease_clock_are_refused_with_a_hint(
        cluster: Cluster) -> None:
    leader = await cluster.leader()
    other = cluster.follower_of(leader)
    await cluster.upsert(make_eval("held"), make_eval("ready"))
    got = await dequeue(leader)
    runtime = leader.app.runtime
    real = runtime.guard._clock
    runtime.guard._clock = lambda: real() + 3600.0
    try:
        calls = [
            leader.stub.Dequeue(broker_pb2.DequeueRequest(schedulers=["service"]), timeout=10),
            leader.stub.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id, token=got.token),
                            timeout=10),
            leader.stub.Nack(broker_pb2.NackRequest(eval_id=got.evaluation.id,
                                                    token=got.token), timeout=10),
        ]
        results = await asyncio.gather(*calls, return_exceptions=True)
    finally:
        runtime.guard._clock = real
    for res in results:
        assert isinstance(res, grpc.aio.AioRpcError), res
        assert res.code() == grpc.StatusCode.UNAVAILABLE, res.details()
    # Nothing was acked, nacked or handed out: the store still has both pending
    # and the new leader delivers both.
    new = await cluster.leader(exclude=leader)
    assert new is other
    seen = {(await dequeue(new)).evaluation.id, (await dequeue(new)).evaluation.id}
    assert seen == {"held", "ready"}
    # Asked again now, the old leader points at the new one.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await leader.stub.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id,
                                                    token=got.token), timeout=10)
    assert _leader_hint(caught.value) == other.address

"""A plan carries its evaluation's delivery token: the served state service
asks the broker leader whether it is outstanding (and restarts its nack
timer) before applying it. A worker whose delivery timed out, was nacked or
names no token cannot commit; with no broker to ask, the plan fails closed."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from broker_cluster import Cluster, dequeue

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.broker.config import BrokerConfig
from drover.rpc.remote import error_info
from drover.worker.errors import DeliveryEnded
from drover.worker.loop import Worker, WorkerConfig

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN


@pytest.fixture
def broker_config() -> BrokerConfig:
    return BrokerConfig(nack_timeout=1.0, initial_nack_delay=0.0)


async def _setup(c: Cluster, job_id: str) -> None:
    await c.state_stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
        id="n1", datacenter="dc1", status=node_pb2.NODE_STATUS_READY,
        resources=job_pb2.Resources(cpu=4000, memory_mb=4000))))
    await c.state_stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(
        id=job_id, datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
            name="g", count=1, tasks=[job_pb2.Task(name="t", driver="sim")])])))


async def _submit(c: Cluster, job_id: str, eval_id: str, token: str,
                  ) -> state_pb2.SubmitPlanResponse:
    job = (await c.state_stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                              id=job_id))).job
    return await c.state_stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id=eval_id, eval_token=token, namespace="default", job_id=job_id,
        job_index=job.modify_index, node_indexes={"n1": 1},
        placements=[allocation_pb2.Allocation(
            id=f"{eval_id}-a", namespace="default", job_id=job_id, task_group="g",
            node_id="n1", name=f"{job_id}.g[0]", desired_status=RUN,
            resources=job_pb2.Resources(cpu=100, memory_mb=100))]), timeout=10)


def _reason(err: grpc.aio.AioRpcError) -> str:
    info = error_info(err)
    return info.reason if info else ""


async def test_only_an_outstanding_delivery_commits(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await _setup(cluster, "web")
    d = await dequeue(leader)
    ev, token = d.evaluation, d.token
    # No token, or another one: refused, nothing written.
    for bad in ("", token.rpartition(".")[0] + ".not-the-nonce", "7.x"):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _submit(cluster, "web", ev.id, bad)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert _reason(err.value) == "PLAN_DELIVERY_ENDED"
    assert (await _submit(cluster, "web", ev.id, token)).placed == 1
    await leader.stub.Nack(broker_pb2.NackRequest(eval_id=ev.id, token=token))
    with pytest.raises(grpc.aio.AioRpcError) as err:  # nacked: no longer this worker's
        await _submit(cluster, "web", ev.id, token)
    assert _reason(err.value) == "PLAN_DELIVERY_ENDED"


@pytest.mark.slow
async def test_a_worker_whose_delivery_timed_out_cannot_commit(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await _setup(cluster, "web")
    d = await dequeue(leader)
    await asyncio.sleep(1.8)  # past the 1 s nack timeout: the broker takes it back
    worker = Worker(cluster.state_channel, WorkerConfig(seed=1))
    view = asyncio.create_task(worker.view.run())
    try:
        await asyncio.wait_for(worker.view.ready.wait(), 10)
        with pytest.raises(DeliveryEnded, match=r"nack timeout|not outstanding|does not match"):
            await worker.process(d.evaluation, d.wait_index, d.token)
    finally:
        view.cancel()
    allocs = await cluster.state_stub.ListAllocations(
        state_pb2.ListAllocationsRequest(namespace="default"))
    assert not allocs.allocations


async def test_no_broker_to_ask_fails_closed(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await _setup(cluster, "web")
    d = await dequeue(leader)
    for node in cluster.nodes:
        await node.stop(0.5)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _submit(cluster, "web", d.evaluation.id, d.token)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert _reason(err.value) == "BROKER_UNREACHABLE"


async def test_the_broker_leader_kept_from_the_last_check_is_read_again_after_a_failover(
        cluster: Cluster) -> None:
    """The state service keeps the broker leader it read last. After a
    failover, a delivery of the old term is still refused and one of the new
    term still commits: the kept leader is read again, never trusted."""
    first = await cluster.leader()
    await _setup(cluster, "web")
    await cluster.state_stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(
        id="api", datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
            name="g", count=1, tasks=[job_pb2.Task(name="t", driver="sim")])])))
    old = await dequeue(first)
    assert (await _submit(cluster, old.evaluation.job_id, old.evaluation.id,
                          old.token)).placed == 1
    await first.stop(0.5)
    second = await cluster.leader(exclude=first)
    with pytest.raises(grpc.aio.AioRpcError) as err:  # the old term's token
        await _submit(cluster, old.evaluation.job_id, old.evaluation.id, old.token)
    assert _reason(err.value) == "PLAN_DELIVERY_ENDED"
    other = "api" if old.evaluation.job_id == "web" else "web"
    for _ in range(10):  # the new leader delivers the other job's evaluation
        new = await dequeue(second)
        if new.evaluation.job_id == other:
            break
        await second.stub.Ack(broker_pb2.AckRequest(eval_id=new.evaluation.id,
                                                    token=new.token))
    assert new.evaluation.job_id == other
    assert (await _submit(cluster, other, new.evaluation.id, new.token)).placed == 1


@pytest.mark.parametrize("reset_every", [0.3, 0.0])
async def test_a_batchs_last_evaluation_keeps_its_delivery_while_it_waits(
        cluster: Cluster, reset_every: float) -> None:
    """Two evaluations dequeued in one batch; the first takes longer than the
    1 s nack timeout. With the held deliveries' timers restarted (Nomad's
    OutstandingReset) the second is still this worker's when its turn comes
    and both are acked; without, the broker took the second back meanwhile."""
    leader = await cluster.leader()
    await _setup(cluster, "web")
    await cluster.state_stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(
        id="api", datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
            name="g", count=1, tasks=[job_pb2.Task(name="t", driver="sim")])])))
    worker = Worker(cluster.state_channel, WorkerConfig(
        seed=1, batch=2, dequeue_timeout=2.0, outstanding_reset=reset_every))
    worker.broker = leader.stub
    real, calls = worker.process, 0

    async def slow_first(*args: object, **kw: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(1.8)  # past the nack timeout
        return await real(*args, **kw)  # type: ignore[arg-type]

    worker.process = slow_first  # type: ignore[method-assign, assignment]
    for _ in range(100):  # both evaluations ready: one Dequeue takes both
        stats = (await leader.stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest())).stats
        if stats.total_ready == 2:
            break
        await asyncio.sleep(0.05)
    assert stats.total_ready == 2
    view = asyncio.create_task(worker.view.run())
    try:
        await asyncio.wait_for(worker.view.ready.wait(), 10)
        assert await asyncio.wait_for(worker.step(), 20) == 2
    finally:
        view.cancel()
    if reset_every:
        assert len(worker.stats.acked) == 2 and not worker.stats.nacked
    else:  # the control: the tail of the batch was taken back
        assert len(worker.stats.acked) < 2

"""Two replicas, the event stream (replay, etcd history, compaction), and
the non-evaluation RPCs."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.rpc.remote import error_info


def _job(jid: str, update: bool = True) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="g", count=3)
    if update:
        tg.update.max_parallel = 1
    return job_pb2.Job(id=jid, datacenters=["dc1"], task_groups=[tg])


async def test_a_write_through_one_replica_is_read_consistently_on_the_other(
    replica, replica2
) -> None:
    for i in range(5):
        r = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(f"j{i}")))
        got = await replica2.stub.GetJob(state_pb2.GetJobRequest(id=f"j{i}"))
        assert got.job.version == 0 and got.meta.index >= r.index
        ev = await replica2.stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=r.eval_id))
        assert ev.evaluation.triggered_by == "job-register"


async def test_job_lifecycle(replica) -> None:
    stub = replica.stub
    r0 = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("api")))
    v1 = _job("api")
    v1.task_groups[0].count = 4  # a changed spec: an unchanged one keeps its version
    r1 = await stub.RegisterJob(state_pb2.RegisterJobRequest(
        job=v1, enforce_index=True, job_modify_index=r0.job_modify_index))
    assert r1.version == 1
    with pytest.raises(grpc.RpcError) as err:
        await stub.RegisterJob(state_pb2.RegisterJobRequest(
            job=_job("api"), enforce_index=True, job_modify_index=r0.job_modify_index))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    info = error_info(err.value)
    assert info is not None and info.reason == "JOB_MODIFY_INDEX_MISMATCH"
    old = await stub.GetDeployment(state_pb2.GetDeploymentRequest(id=r0.deployment_id))
    assert old.deployment.status == 5  # cancelled by version 1's deployment
    versions = await stub.ListJobVersions(state_pb2.ListJobVersionsRequest(id="api"))
    assert [v.version for v in versions.versions] == [1, 0]
    v0 = await stub.GetJob(state_pb2.GetJobRequest(id="api", version=0))
    assert v0.job.job_modify_index == r0.job_modify_index
    d = await stub.DeregisterJob(state_pb2.DeregisterJobRequest(id="api"))
    stopped = await stub.GetJob(state_pb2.GetJobRequest(id="api"))
    assert stopped.job.stop and d.eval_id
    await stub.DeregisterJob(state_pb2.DeregisterJobRequest(id="api", purge=True))
    for call in (stub.GetJob(state_pb2.GetJobRequest(id="api")),
                 stub.DeregisterJob(state_pb2.DeregisterJobRequest(id="api"))):
        with pytest.raises(grpc.RpcError) as err:
            await call
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as err:
        await stub.RegisterJob(state_pb2.RegisterJobRequest(
            job=job_pb2.Job(id="x", priority=200, datacenters=["dc1"])))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "priority" in str(err.value.details())


async def test_allocations_nodes_and_lists(replica) -> None:
    RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("web", update=False)))
    allocs = [allocation_pb2.Allocation(id=f"a{i}", job_id="web", node_id="n1") for i in range(4)]
    await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=allocs))
    await stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
        state_pb2.AllocationUpdate(id="a1", client_status=RUNNING, healthy=True)]))
    a1 = await stub.GetAllocation(state_pb2.GetAllocationRequest(id="a1"))
    assert a1.allocation.client_status == RUNNING and a1.allocation.deployment_status.healthy
    page = await stub.ListAllocations(state_pb2.ListAllocationsRequest(
        filter='client_status == "running"'))
    assert [a.id for a in page.allocations] == ["a1"]
    desc = await stub.ListAllocations(state_pb2.ListAllocationsRequest(
        order_by="create_index desc", page_size=3, prefix="a"))
    assert len(desc.allocations) == 3 and desc.next_page_token
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(
        node=node_pb2.Node(id="n1", status=node_pb2.NODE_STATUS_READY)))
    nodes = await stub.ListNodes(state_pb2.ListNodesRequest(filter='status == "ready"'))
    assert [n.id for n in nodes.nodes] == ["n1"]
    with pytest.raises(grpc.RpcError) as err:
        await stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
            state_pb2.AllocationUpdate(id="zz", client_status=RUNNING)]))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def _collect(stream, want: int) -> list[state_pb2.Event]:
    events: list[state_pb2.Event] = []
    async for resp in stream:
        events.extend(resp.events)
        if len(events) >= want:
            return events
    return events


async def test_subscribe_live_replay_and_history(replica, replica2) -> None:
    stub = replica.stub
    first = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("s1", update=False)))
    live = stub.Subscribe(state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_EVALUATION]))
    task = asyncio.create_task(_collect(live, 1))
    await asyncio.sleep(0.2)
    second = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("s2", update=False)))
    got = await asyncio.wait_for(task, 5)
    assert [e.key for e in got] == [second.eval_id] and got[0].evaluation.job_id == "s2"
    live.cancel()
    # Replica 2 started before both writes: replay from its ring.
    replay = replica2.stub.Subscribe(state_pb2.SubscribeRequest(
        topics=[state_pb2.TOPIC_JOB], from_index=first.index - 1))
    got = await asyncio.wait_for(_collect(replay, 2), 5)
    assert [e.key for e in got] == ["s1", "s2"]
    replay.cancel()


async def test_subscribe_from_a_compacted_index_fails_cleanly(replica) -> None:
    stub = replica.stub
    r = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
        evaluation_pb2.Evaluation(id="c1", type="service")]))
    # From before this replica listed: served from etcd history while it exists.
    assert replica.service.servicer.hub._ring.floor > 1
    hist = stub.Subscribe(state_pb2.SubscribeRequest(from_index=1, keys=["c1"]))
    got = await asyncio.wait_for(_collect(hist, 1), 5)
    assert got[0].key == "c1" and got[0].index == r.index
    hist.cancel()
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
        evaluation_pb2.Evaluation(id="c2", type="service")]))
    await replica.store.compact(await replica.store.revision())
    stream = stub.Subscribe(state_pb2.SubscribeRequest(from_index=1))
    with pytest.raises(grpc.RpcError) as err:
        async for _ in stream:
            pass
    assert err.value.code() == grpc.StatusCode.OUT_OF_RANGE
    info = error_info(err.value)
    assert info is not None and info.reason == "INDEX_COMPACTED"


async def test_a_quiet_stream_carries_the_heartbeats_its_client_asked_for(replica) -> None:
    """Silence is detectable: heartbeats at the asked interval, even while the
    replica is busy with changes the stream filters out, indexes never
    going backwards."""
    request = state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_NODE])
    request.heartbeat_interval.FromMilliseconds(100)
    call = replica.stub.Subscribe(request, timeout=30)
    first = await call.read()
    indexes = [first.index]
    for _ in range(3):  # quiet: heartbeats at the current index
        resp = await call.read()
        assert not resp.events
        indexes.append(resp.index)
    written = 0
    for i in range(40):  # busy with jobs this stream does not want
        r = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(f"hb{i}")))
        written = r.index
        await asyncio.sleep(0.01)
    while indexes[-1] < written:
        resp = await call.read()
        assert not resp.events
        indexes.append(resp.index)
    call.cancel()
    assert indexes == sorted(indexes)
    # Heartbeats arrived while the jobs were being written, not only after.
    assert any(first.index < i < written for i in indexes)

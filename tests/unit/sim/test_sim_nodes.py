"""Simulated nodes heartbeat by the TTL the control plane answers
(:mod:`drover.sim.nodes` with :mod:`drover.worker.heartbeats`)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from virtual_clock import VirtualClock

from drover.api.state.v1 import state_pb2
from drover.sim.nodes import SimConfig, SimNodes


class _Stub:
    def __init__(self, ttl: float | None) -> None:
        self.ttl = ttl
        self.beats: list[str] = []
        self.fail = False

    async def HeartbeatNodes(self, req: Any, **_: Any) -> Any:
        if self.fail:
            raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
                                       grpc.aio.Metadata(), "down")
        resp = state_pb2.HeartbeatNodesResponse()
        for node_id in req.node_ids:
            self.beats.append(node_id)
            beat = resp.heartbeats.add(node_id=node_id, index=1)
            if node_id == "gone":
                beat.error_reason = "NOT_FOUND"
            elif self.ttl is not None:
                beat.heartbeat_ttl.FromMilliseconds(int(self.ttl * 1000))
        return resp


def _sim(stub: _Stub, clock: VirtualClock) -> SimNodes:
    sim = SimNodes(grpc.aio.insecure_channel("127.0.0.1:1"), SimConfig(count=2, heartbeat=3.0),
                   clock=clock)
    sim.stub = stub  # type: ignore[assignment]
    return sim


@pytest.mark.parametrize(("ttl", "next_in"), [(200.0, 200.0), (None, 3.0)])
async def test_the_next_heartbeat_is_due_when_the_answered_ttl_passed(
        clock: VirtualClock, ttl: float | None, next_in: float) -> None:
    stub = _Stub(ttl)
    sim = _sim(stub, clock)
    clock.advance(10)
    await sim.beat(["sim-0"])
    assert stub.beats == ["sim-0"] and sim.heartbeats == 1
    assert sim.schedule.next_at() == 10 + next_in


async def test_one_call_carries_many_nodes_and_one_nodes_error_is_its_own(
        clock: VirtualClock) -> None:
    stub = _Stub(20.0)
    sim = _sim(stub, clock)
    await sim.beat(["sim-0", "gone", "sim-1"])
    assert stub.beats == ["sim-0", "gone", "sim-1"] and sim.heartbeats == 2
    assert sim.schedule.due(1.0) == ["gone"]  # retried soon
    assert sim.schedule.due(20.0) == ["sim-0", "sim-1"]


async def test_a_failed_heartbeat_is_retried_within_a_second(clock: VirtualClock) -> None:
    stub = _Stub(200.0)
    stub.fail = True
    sim = _sim(stub, clock)
    await sim.beat(["sim-0"])
    assert sim.heartbeats == 0 and sim.schedule.next_at() == 1.0


async def test_heartbeats_due_within_a_second_of_the_first_go_in_one_call(
        clock: VirtualClock) -> None:
    import asyncio

    from drover.sim import nodes

    stub = _Stub(100.0)
    sim = _sim(stub, clock)
    calls: list[list[str]] = []

    async def beat(node_ids: list[str]) -> None:
        calls.append(node_ids)

    sim.beat = beat  # type: ignore[method-assign]
    for i, at in enumerate((5.0, 5.4, 5.9, 7.0)):
        sim.schedule.add(f"n{i}", at)
    clock.advance(4.0)  # nothing due yet: the loop waits for the first
    task = asyncio.create_task(sim._heartbeat())
    await asyncio.sleep(0.05)
    assert calls == []
    clock.advance(1.0)
    await asyncio.sleep(1.1)  # the loop naps at most a second
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert nodes.HEARTBEAT_WINDOW == 1.0
    assert calls == [["n0", "n1", "n2"]]  # n3 (due at 7) waits for its own turn


class _SmallState:
    """A state service whose writes hold at most ``cap`` objects: it refuses
    bigger calls as the real one does (INVALID_ARGUMENT naming max_objects)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.calls: list[list[str]] = []

    async def UpdateAllocations(self, req: Any, **_: Any) -> Any:
        from drover.errors import InvalidArgument
        from drover.rpc.errors import as_rpc_error

        ids = [u.id for n in req.nodes for u in n.updates] + [u.id for u in req.updates]
        if len(ids) * 3 > self.cap:  # each report and its job's writes
            raise as_rpc_error(InvalidArgument("too big", metadata={
                "field": "updates", "max_objects": str(self.cap)}))
        self.calls.append(ids)
        return state_pb2.UpdateAllocationsResponse()


async def test_reports_refused_for_size_are_sent_again_sized_to_the_cluster(
        clock: VirtualClock) -> None:
    sim = _sim(_Stub(None), clock)
    small = _SmallState(6)
    sim.stub = small  # type: ignore[assignment]
    call = [(f"n{i}", [state_pb2.AllocationUpdate(id=f"a{i}")]) for i in range(5)]
    await sim._send_nodes(call)
    assert sim.report_room == 6  # learnt from the refusal, kept for later calls
    assert [i for c in small.calls for i in c] == [f"a{i}" for i in range(5)]
    assert all(len(c) <= 2 for c in small.calls) and sim.reports == 5


class _Cluster:
    """GetJob (one job, min_healthy_time 1 s) and the reports sent."""

    def __init__(self) -> None:
        from google.protobuf.duration_pb2 import Duration

        from drover.api.types.v1 import job_pb2

        self.job = job_pb2.Job(id="j", namespace="default", task_groups=[job_pb2.TaskGroup(
            name="g", count=1, update=job_pb2.UpdateStrategy(
                min_healthy_time=Duration(seconds=1)))])
        self.reports: list[tuple[str, int, bool]] = []
        self.get_job_calls = 0

    async def GetJob(self, req: Any, **_: Any) -> Any:
        self.get_job_calls += 1
        return state_pb2.GetJobResponse(job=self.job)

    async def UpdateAllocations(self, req: Any, **_: Any) -> Any:
        for n in req.nodes:
            self.reports += [(u.id, u.client_status, u.healthy) for u in n.updates]
        self.reports += [(u.id, u.client_status, u.healthy) for u in req.updates]
        return state_pb2.UpdateAllocationsResponse()


async def test_running_healthy_allocations_cost_a_tick_nothing_until_observed_again(
        clock: VirtualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.api.types.v1 import allocation_pb2
    from drover.sim import nodes

    cluster = _Cluster()
    sim = _sim(_Stub(None), clock)
    sim.stub = cluster  # type: ignore[assignment]
    allocs = [allocation_pb2.Allocation(
        id=f"a{i}", namespace="default", job_id="j", task_group="g", node_id=f"sim-{i % 2}",
        deployment_id="d1", desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
        for i in range(40)]
    for a in allocs:
        await sim._observe(a)
    assert cluster.get_job_calls == 1  # the job and its behaviour, read once
    for _ in range(20):  # 2 s of ticks: each starts, then is healthy
        clock.advance(0.1)
        await sim.tick()
    assert sorted(cluster.reports) == sorted(
        [(a.id, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, False) for a in allocs]
        + [(a.id, 0, True) for a in allocs])
    steps = 0
    real_step = nodes.step

    def counting(*args: Any) -> Any:
        nonlocal steps
        steps += 1
        return real_step(*args)

    monkeypatch.setattr(nodes, "step", counting)
    for _ in range(50):
        clock.advance(0.1)
        await sim.tick()
    assert steps == 0 and len(sim.tracks) == 40  # still run, stepped never
    cluster.reports.clear()
    stopped = allocation_pb2.Allocation()
    stopped.CopyFrom(allocs[7])
    stopped.desired_status = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    await sim._observe(stopped)
    clock.advance(0.1)
    await sim.tick()
    assert cluster.reports == [("a7", allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE, False)]
    assert steps == 1
    clock.advance(0.1)
    await sim.tick()  # the completed allocation is forgotten, the others left alone
    assert steps == 2 and len(sim.tracks) == 39

"""The worker library against a real state service over a real etcd: a plan
refused as PLAN_STALE is computed again from fresh state and then applied."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.coord.keys import Keyspace
from drover.rpc.errors import ErrorInterceptor
from drover.state.app import EtcdStore, build_on_store
from drover.worker.loop import Worker, WorkerConfig
from drover.worker.plan import Snapshot
from drover.worker.planner import compute_plan
from drover.worker.view import ClusterView


@pytest.fixture
async def state(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[grpc.aio.Channel]:
    etcd = grpc.aio.insecure_channel(etcd_endpoint)
    service = await build_on_store(EtcdStore(etcd), keyspace)
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    for binding in service.bindings:
        binding.add(binding.servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel
    finally:
        await channel.close()
        await server.stop(None)
        await service.close()
        await etcd.close()


def _node(node_id: str, **attrs: str) -> node_pb2.Node:
    return node_pb2.Node(id=node_id, datacenter="dc1", status=node_pb2.NODE_STATUS_READY,
                         resources=job_pb2.Resources(cpu=1000, memory_mb=4000),
                         attributes=attrs)


async def _register_web(stub: Any) -> evaluation_pb2.Evaluation:
    """Node n1, and job web (2 x group g) registered: its evaluation."""
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n1")))
    job = job_pb2.Job(id="web", datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
        name="g", count=2, tasks=[job_pb2.Task(name="t", driver="sim")])])
    reg = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    got = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=reg.eval_id))
    return got.evaluation


@contextlib.asynccontextmanager
async def _viewing(worker: Worker) -> AsyncIterator[Worker]:
    """The worker with its cluster view running and ready."""
    view = asyncio.create_task(worker.view.run())
    try:
        await asyncio.wait_for(worker.view.ready.wait(), 10)
        yield worker
    finally:
        view.cancel()


def _intruder() -> allocation_pb2.Allocation:
    """One of web's allocations, placed by another writer behind the worker's back."""
    return allocation_pb2.Allocation(
        id="intruder", namespace="default", job_id="web", task_group="g", name="web.g[0]",
        node_id="n1", desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
        resources=job_pb2.Resources(cpu=100, memory_mb=300))


async def test_stale_plan_is_recomputed_from_fresh_state(state: grpc.aio.Channel) -> None:
    stub = state_pb2_grpc.StateServiceStub(state)
    ev = await _register_web(stub)

    worker = Worker(state, WorkerConfig(seed=1))
    async with _viewing(worker):
        real = worker.snapshot
        calls = 0

        async def snapshot_then_move(e: evaluation_pb2.Evaluation) -> Snapshot:
            nonlocal calls
            calls += 1
            snap = await real(e)
            if calls == 1:  # another writer places one of the job's allocations meanwhile
                await stub.UpsertAllocations(
                    state_pb2.UpsertAllocationsRequest(allocations=[_intruder()]))
            return snap

        # one instance's method replaced (mypy compares it with the unbound one, self and all)
        worker.snapshot = snapshot_then_move  # type: ignore[method-assign, assignment]
        follow_ups = await asyncio.wait_for(worker.process(ev, ev.modify_index), 20)
    assert not follow_ups
    # the first plan (two placements) was refused; the second saw the intruder
    assert calls == 2 and worker.stats.stale == 1 and worker.stats.placed == 1
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="default"))
    assert sorted(a.name for a in allocs.allocations) == ["web.g[0]", "web.g[1]"]
    assert all(a.node_id == "n1" and a.resources.cpu == 100 for a in allocs.allocations)


async def test_reads_taken_ahead_that_went_stale_are_read_again(
        state: grpc.aio.Channel) -> None:
    """The loop reads the next evaluation's job while it plans the current
    one; if the job's allocations moved in between, the plan is refused stale
    and the evaluation is planned on fresh reads."""
    stub = state_pb2_grpc.StateServiceStub(state)
    ev = await _register_web(stub)
    worker = Worker(state, WorkerConfig(seed=1))
    async with _viewing(worker):
        ahead = asyncio.ensure_future(worker.read_job(ev))
        assert not (await ahead).allocs
        await stub.UpsertAllocations(
            state_pb2.UpsertAllocationsRequest(allocations=[_intruder()]))
        follow_ups = await asyncio.wait_for(worker.process(ev, ev.modify_index, reads=ahead), 20)
    assert not follow_ups
    assert worker.stats.stale == 1 and worker.stats.placed == 1
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="default"))
    assert sorted(a.name for a in allocs.allocations) == ["web.g[0]", "web.g[1]"]


async def test_nothing_fits_acks_with_a_blocked_evaluation(state: grpc.aio.Channel) -> None:
    stub = state_pb2_grpc.StateServiceStub(state)
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n1")))
    job = job_pb2.Job(id="huge", datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
        name="g", count=1, tasks=[job_pb2.Task(
            name="t", driver="sim", resources=job_pb2.Resources(cpu=5000, memory_mb=1))])])
    reg = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    ev = (await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=reg.eval_id))).evaluation
    worker = Worker(state, WorkerConfig(seed=1))
    async with _viewing(worker):
        follow_ups: Any = await asyncio.wait_for(worker.process(ev, ev.modify_index), 20)
    [blocked] = follow_ups
    assert blocked.status == evaluation_pb2.EVALUATION_STATUS_BLOCKED
    assert blocked.triggered_by == "queued-allocs" and blocked.previous_eval == ev.id
    assert worker.stats.plans == 0  # nothing to write


async def _place_big_job(stub: Any, state: grpc.aio.Channel, config: WorkerConfig,
                         nodes: int = 100, count: int = 150,
                         cpu: int = 10) -> tuple[Worker, list[Any]]:
    """A job of ``count`` allocations over ``nodes`` nodes (more than one
    plan's txn holds) planned by ``worker.process`` for one delivery."""
    for i in range(nodes):
        await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node(f"n{i}")))
    job = job_pb2.Job(id="big", datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
        name="g", count=count, tasks=[job_pb2.Task(
            name="t", driver="sim", resources=job_pb2.Resources(cpu=cpu, memory_mb=10))])])
    reg = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    ev = (await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=reg.eval_id))).evaluation
    worker = Worker(state, config)
    async with _viewing(worker):
        follow_ups = await asyncio.wait_for(worker.process(ev, ev.modify_index), 30)
    return worker, follow_ups


async def test_a_capped_plan_is_continued_within_its_delivery(state: grpc.aio.Channel) -> None:
    stub = state_pb2_grpc.StateServiceStub(state)
    worker, follow_ups = await _place_big_job(stub, state, WorkerConfig(seed=1))
    assert not follow_ups  # all placed by this evaluation: no continuation follow-up
    assert worker.stats.placed == 150 and worker.stats.plans >= 2
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(
        namespace="default", page_size=1000))
    assert len({a.name for a in allocs.allocations}) == 150


async def test_past_its_plan_rounds_a_delivery_hands_the_rest_on(
        state: grpc.aio.Channel) -> None:
    stub = state_pb2_grpc.StateServiceStub(state)
    worker, follow_ups = await _place_big_job(stub, state, WorkerConfig(seed=1, plan_rounds=1))
    [more] = follow_ups
    assert more.triggered_by == "plan-continuation"
    assert more.status == evaluation_pb2.EVALUATION_STATUS_PENDING
    assert worker.stats.plans == 1 and 0 < worker.stats.placed < 150


async def test_plans_shrink_to_the_cap_a_state_replica_names(state: grpc.aio.Channel) -> None:
    # told 1,024 (as `drover dev` runs etcd) by a replica on etcd's default 128
    stub = state_pb2_grpc.StateServiceStub(state)
    worker, follow_ups = await _place_big_job(stub, state,
                                              WorkerConfig(seed=1, max_txn_ops=1024))
    assert not follow_ups and worker.stats.placed == 150
    assert worker.max_plan_objects == 125  # 128 less the marker, the job's status and summary


async def test_a_submitted_plan_holds_its_room_in_the_view_until_refused(
        state: grpc.aio.Channel) -> None:
    stub = state_pb2_grpc.StateServiceStub(state)
    ev = await _register_web(stub)
    worker = Worker(state, WorkerConfig(seed=1))
    async with _viewing(worker):
        snap = await worker.snapshot(ev)
        plan = compute_plan(snap)
        assert len(plan.placements) == 2
        held = []
        real = worker.state.SubmitPlan

        async def submit_while_down(request: Any, **kw: Any) -> Any:
            held.append(worker.view.used.get("n1"))
            await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
                id="n1", status=node_pb2.NODE_STATUS_DOWN))
            return await real(request, **kw)

        worker.state.SubmitPlan = submit_while_down
        resp = await worker.submit(ev, snap, plan, "")
    assert [r.reason for r in resp.refused] == ["node is not ready for placements"]
    assert held[0] is not None and held[0].cpu == 2 * plan.placements[0].resources.cpu
    assert worker.view.used["n1"].cpu == 0  # taken back: nothing was committed


async def _all_allocs(stub: Any) -> list[allocation_pb2.Allocation]:
    out: list[allocation_pb2.Allocation] = []
    token = ""
    while True:
        got = await stub.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace="default", page_size=500, page_token=token))
        out.extend(got.allocations)
        token = got.next_page_token
        if not token:
            return out


async def test_a_job_larger_than_every_cap_places_and_updates_whole(
        state: grpc.aio.Channel) -> None:
    """1,000 allocations over 600 nodes: each plan is held to the txn (125
    objects here) and the job's allocation set, far past a request's entries,
    travels as ``job_allocs``; no plan is refused for its size, and the new
    version's destructive update (a stop and a placement each) goes the
    same way."""
    stub = state_pb2_grpc.StateServiceStub(state)
    config = WorkerConfig(seed=1, plan_rounds=1000)
    # two to a node at most: the job spreads over more than 256 nodes
    worker, follow_ups = await _place_big_job(stub, state, config, nodes=600, count=1000,
                                              cpu=400)
    assert not follow_ups and worker.stats.placed == 1000 and worker.stats.nacked == 0
    assert worker.stats.plans >= 1000 // worker.max_plan_objects
    allocs = await _all_allocs(stub)
    assert len({a.name for a in allocs}) == 1000 and len({a.node_id for a in allocs}) > 256
    job = (await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="big"))).job
    job.task_groups[0].tasks[0].config["v"] = "2"
    job.task_groups[0].update.max_parallel = 1000  # all at once
    reg = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    ev = (await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=reg.eval_id))).evaluation
    async with _viewing(worker):
        follow_ups = await asyncio.wait_for(worker.process(ev, ev.modify_index), 120)
    assert not follow_ups
    # each round after the first read only what changed (a delta read)
    assert worker.job_allocs.hits >= 1
    allocs = await _all_allocs(stub)
    live = [a for a in allocs if a.desired_status == allocation_pb2.ALLOC_DESIRED_STATUS_RUN]
    versions = sorted(a.job_version for a in live)
    assert (len(live), versions[0], versions[-1]) == (1000, job.version + 1, job.version + 1)


async def test_an_allocation_on_a_node_that_is_gone_is_stopped_as_lost(
        state: grpc.aio.Channel) -> None:
    """Nomad's reconciler: a live allocation whose node the state does not
    know is stopped with client status lost (the state service takes the
    plan's update whole) and its slot placed on a node that is there."""
    stub = state_pb2_grpc.StateServiceStub(state)
    ev = await _register_web(stub)
    orphan = _intruder()
    orphan.node_id, orphan.client_status = "gone", allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
    await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[orphan]))
    worker = Worker(state, WorkerConfig(seed=1))
    async with _viewing(worker):
        await asyncio.wait_for(worker.process(ev, ev.modify_index), 20)
    got = (await stub.GetAllocation(state_pb2.GetAllocationRequest(id=orphan.id))).allocation
    assert got.desired_status == allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    assert got.client_status == allocation_pb2.ALLOC_CLIENT_STATUS_LOST
    assert got.desired_description == "alloc is lost since its node is down"
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="default"))
    run = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
    live = [a for a in allocs.allocations if a.desired_status == run]
    assert sorted(a.name for a in live) == ["web.g[0]", "web.g[1]"]
    assert all(a.node_id == "n1" for a in live)


async def test_a_view_reloaded_lists_again_and_keeps_following(state: grpc.aio.Channel) -> None:
    """``ClusterView.reload`` (a wait for a refresh index timed out) cuts the
    stream and lists everything again; the view itself keeps running and
    follows what is written after."""
    stub = state_pb2_grpc.StateServiceStub(state)
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n1")))
    worker = Worker(state, WorkerConfig(seed=1))
    async with _viewing(worker) as w:
        view = w.view
        assert set(view.nodes) == {"n1"}
        view.nodes.pop("n1")  # as a view that missed an event would be
        view.reload("a test")
        up = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n2")))
        assert await view.wait_past(up.index, within=10)
        assert set(view.nodes) == {"n1", "n2"}  # listed again, then followed
        view.reload("again")
        up = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n3")))
        assert await view.wait_past(up.index, within=10)
        assert set(view.nodes) == {"n1", "n2", "n3"}


class _HeldLists:
    """A state stub whose ListNodes waits for ``go`` once ``hold`` is set:
    a reload's list that takes its time."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = state_pb2_grpc.StateServiceStub(channel)
        self.hold = False
        self.listing = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    async def ListNodes(self, request: Any, **kw: Any) -> Any:
        if self.hold:
            self.listing.set()
            await self.go.wait()
        return await self._stub.ListNodes(request, **kw)


async def test_a_view_being_reloaded_still_holds_its_nodes_and_reservations(
        state: grpc.aio.Channel) -> None:
    """While a reload lists, plans go on over the view as it was (before, it
    was emptied first: an evaluation planned meanwhile saw no node and went
    to blocked -- CI's canary that never placed); a placement reserved while
    it lists and committed after the list's read is still counted."""
    stub = state_pb2_grpc.StateServiceStub(state)
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n1")))
    held = _HeldLists(state)
    view = ClusterView(held)
    task = asyncio.create_task(view.run())
    try:
        await asyncio.wait_for(view.ready.wait(), 10)
        placed = allocation_pb2.Allocation(id="a-1", node_id="n1",
                                           desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
        placed.resources.cpu = 300
        placed.resources.memory_mb = 256
        view.reserve([placed])  # submitted, not committed yet
        held.hold = True
        view.reload("a test")
        await asyncio.wait_for(held.listing.wait(), 10)
        assert [n.id for n in view.node_set()] == ["n1"]
        assert view.used["n1"].cpu == 300
        held.hold = False
        held.go.set()
        up = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n2")))
        assert await view.wait_past(up.index, within=10)
        assert set(view.nodes) == {"n1", "n2"}
        assert view.used["n1"].cpu == 300  # not listed (never committed), still reserved
        view.release([placed])
        assert view.used["n1"].cpu == 0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

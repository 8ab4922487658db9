"""Plans that etcd orders: two real state replicas over one etcd, racing plans
for the last room on nodes, many rounds at once. No node is ever
overcommitted; the side that lost is told which node refused and why, and
a worker that lost places elsewhere."""

from __future__ import annotations

import asyncio

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.worker.loop import Worker, WorkerConfig
from drover.worker.plan import Snapshot

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
ROUNDS = 12


def _job(job_id: str, cpu: int = 600) -> job_pb2.Job:
    return job_pb2.Job(id=job_id, datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
        name="g", count=1, tasks=[job_pb2.Task(
            name="t", driver="sim", resources=job_pb2.Resources(cpu=cpu, memory_mb=100))])])


def _node(node_id: str, cpu: int = 1000) -> node_pb2.Node:
    return node_pb2.Node(id=node_id, datacenter="dc1", status=node_pb2.NODE_STATUS_READY,
                         resources=job_pb2.Resources(cpu=cpu, memory_mb=4000))


async def _plan(stub, job_id: str, node_id: str, aid: str) -> state_pb2.SubmitPlanResponse:
    job = (await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id=job_id))).job
    return await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id=f"e-{aid}", namespace="default", job_id=job_id, job_index=job.modify_index,
        node_indexes={node_id: 1}, placements=[allocation_pb2.Allocation(
            id=aid, namespace="default", job_id=job_id, task_group="g", node_id=node_id,
            name=f"{job_id}.g[0]", desired_status=RUN,
            resources=job_pb2.Resources(cpu=600, memory_mb=100))]), timeout=30)


async def _live_cpu_per_node(stub) -> dict[str, int]:
    out: dict[str, int] = {}
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="*"))
    for a in allocs.allocations:
        if a.desired_status == RUN:
            out[a.node_id] = out.get(a.node_id, 0) + a.resources.cpu
    return out


@pytest.mark.slow
async def test_two_replicas_racing_for_a_nodes_last_room_never_overcommit(
        replica, replica2) -> None:
    a, b = replica.stub, replica2.stub
    for i in range(ROUNDS):
        await a.UpsertNode(state_pb2.UpsertNodeRequest(node=_node(f"n{i}")))
        for side in "ab":
            await a.RegisterJob(state_pb2.RegisterJobRequest(job=_job(f"{side}{i}")))
    await b.GetNode(state_pb2.GetNodeRequest(id=f"n{ROUNDS - 1}"))  # b has caught up

    # Every round at once: job a<i> through replica a and job b<i> through
    # replica b each place 600 of node n<i>'s 1000.
    results = await asyncio.gather(*(
        _plan(stub, f"{side}{i}", f"n{i}", f"{side}{i}-0")
        for i in range(ROUNDS) for side, stub in (("a", a), ("b", b))))
    for i in range(ROUNDS):
        ra, rb = results[2 * i], results[2 * i + 1]
        assert sorted((ra.placed, rb.placed)) == [0, 1], (i, ra, rb)
        lost = ra if ra.placed == 0 else rb
        assert [(r.node_id, r.reason) for r in lost.refused] in (
            [(f"n{i}", "node has no room: cpu")], [(f"n{i}", "node changed")])
        assert lost.refresh_index > 0
    for stub in (a, b):
        used = await _live_cpu_per_node(stub)
        assert all(cpu <= 1000 for cpu in used.values()), used
        assert len(used) == ROUNDS


@pytest.mark.slow
async def test_the_worker_that_lost_the_race_places_elsewhere(replica, replica2) -> None:
    a = replica.stub
    # n1 is fuller (best fit prefers it) with room for one of the two jobs; n2 is empty.
    await a.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n1")))
    await a.UpsertNode(state_pb2.UpsertNodeRequest(node=_node("n2")))
    await a.RegisterJob(state_pb2.RegisterJobRequest(job=_job("filler", cpu=300)))
    await _filler(a)
    evs = []
    for job_id in ("ja", "jb"):
        reg = await a.RegisterJob(state_pb2.RegisterJobRequest(job=_job(job_id)))
        evs.append((await a.GetEvaluation(
            state_pb2.GetEvaluationRequest(id=reg.eval_id))).evaluation)

    workers = [Worker(replica.channel, WorkerConfig(seed=1)),
               Worker(replica2.channel, WorkerConfig(seed=1))]
    views = [asyncio.create_task(w.view.run()) for w in workers]
    # Both snapshots are taken before either plan is submitted: a true race.
    barrier = asyncio.Barrier(2)
    for w in workers:
        real = w.snapshot

        async def raced(ev, real=real) -> Snapshot:  # type: ignore[no-untyped-def]
            snap = await real(ev)
            if not barrier.broken:
                try:
                    async with asyncio.timeout(5):
                        await barrier.wait()
                except (TimeoutError, asyncio.BrokenBarrierError):
                    pass
                await barrier.abort()  # later snapshots do not wait
            return snap

        w.snapshot = raced  # type: ignore[method-assign]
    try:
        for w in workers:
            await asyncio.wait_for(w.view.ready.wait(), 10)
        follow = await asyncio.wait_for(asyncio.gather(
            workers[0].process(evs[0], evs[0].modify_index),
            workers[1].process(evs[1], evs[1].modify_index)), 30)
    finally:
        for t in views:
            t.cancel()
    assert follow == [[], []]
    assert sorted(w.stats.partial for w in workers) == [0, 1]
    allocs = (await a.ListAllocations(state_pb2.ListAllocationsRequest(namespace="*"))).allocations
    where = {x.job_id: x.node_id for x in allocs if x.desired_status == RUN}
    assert where["filler"] == "n1" and {where["ja"], where["jb"]} == {"n1", "n2"}
    assert all(cpu <= 1000 for cpu in (await _live_cpu_per_node(a)).values())


async def _filler(stub) -> None:
    await _place(stub, "filler", "n1", "filler-0", 300)


async def _place(stub, job_id: str, node_id: str, aid: str, cpu: int) -> None:
    job = (await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id=job_id))).job
    resp = await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e-fill", namespace="default", job_id=job_id, job_index=job.modify_index,
        node_indexes={node_id: 1}, placements=[allocation_pb2.Allocation(
            id=aid, namespace="default", job_id=job_id, task_group="g", node_id=node_id,
            name=f"{job_id}.g[0]", desired_status=RUN,
            resources=job_pb2.Resources(cpu=cpu, memory_mb=100))]))
    assert resp.placed == 1

"""GarbageCollect: Nomad's GC rules per kind, cutoffs, the required fence,
bounded txns and the cursor.

The cases, not a test module: ``tests/integration/state/test_state_gc.py``
runs them on a state service over etcd, ``tests/unit/state/test_state_gc_memkv.py``
on one over :class:`MemoryKV` (the same bodies; the ``replica`` fixture differs)."""

from __future__ import annotations

import time

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from state_harness import StateReplica as Replica

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.coord.fence import Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.rpc.remote import error_info

COMPLETE = evaluation_pb2.EVALUATION_STATUS_COMPLETE
PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
EVALS = state_pb2.GC_KIND_EVALUATIONS


async def fence_of(replica: Replica, prefix: str) -> Fence:
    key = Keyspace(prefix).election_prefix("deployments") + "gc-test"
    result = await replica.store.txn([], [Put(key.encode(), b"")])
    return Fence(key, result.revision)


def ts(at: float) -> Timestamp:
    out = Timestamp()
    out.FromNanoseconds(int(at * 1e9))
    return out


async def gc(replica: Replica, fence: Fence, kind: int, cutoff: float, **kw: object) -> (
        state_pb2.GarbageCollectResponse):
    req = state_pb2.GarbageCollectRequest(kind=kind, cutoff=ts(cutoff), **kw)  # type: ignore[arg-type]
    return await replica.stub.GarbageCollect(req, metadata=fence.metadata())


def ev(eval_id: str, status: int, *, job_id: str = "", eval_type: str = "service") -> (
        evaluation_pb2.Evaluation):
    return evaluation_pb2.Evaluation(id=eval_id, namespace="default", type=eval_type,
                                     job_id=job_id, status=status)  # type: ignore[arg-type]


def web_job() -> job_pb2.Job:
    return job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                       datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(name="g", count=1)])


def alloc(alloc_id: str, eval_id: str, *, job_id: str = "web", node_id: str = "n1",
          terminal: bool = True) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(
        id=alloc_id, namespace="default", eval_id=eval_id, job_id=job_id, node_id=node_id,
        desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_STOP if terminal
        else allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
        client_status=allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE if terminal
        else allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)


async def ids(replica: Replica, what: str) -> set[str]:
    if what == "evaluations":
        r = await replica.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(page_size=1000))
        return {e.id for e in r.evaluations}
    if what == "allocations":
        a = await replica.stub.ListAllocations(state_pb2.ListAllocationsRequest(page_size=1000))
        return {x.id for x in a.allocations}
    if what == "jobs":
        j = await replica.stub.ListJobs(state_pb2.ListJobsRequest(page_size=1000))
        return {x.id for x in j.jobs}
    if what == "nodes":
        n = await replica.stub.ListNodes(state_pb2.ListNodesRequest(page_size=1000))
        return {x.id for x in n.nodes}
    d = await replica.stub.ListDeployments(state_pb2.ListDeploymentsRequest(page_size=1000))
    return {x.id for x in d.deployments}


async def test_gc_requires_a_fence_and_a_valid_request(replica: Replica, etcd_prefix: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await replica.stub.GarbageCollect(
            state_pb2.GarbageCollectRequest(kind=EVALS, cutoff=ts(time.time())))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    info = error_info(err.value)
    assert info is not None and info.reason == "FENCE_REQUIRED"
    fence = await fence_of(replica, etcd_prefix)
    for bad in (state_pb2.GarbageCollectRequest(cutoff=ts(1.0)),
                state_pb2.GarbageCollectRequest(kind=EVALS),
                state_pb2.GarbageCollectRequest(kind=EVALS, cutoff=ts(1.0), max_examined=10**6)):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await replica.stub.GarbageCollect(bad, metadata=fence.metadata())
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await replica.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[ev("e1", COMPLETE)]), metadata=fence.metadata())
    stale = Fence(fence.leader_key, fence.term + 1000)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await gc(replica, stale, EVALS, time.time() + 60)
    info = error_info(err.value)
    assert info is not None and info.reason == "FENCE_LOST"
    assert await ids(replica, "evaluations") == {"e1"}


async def test_eval_gc_follows_nomads_rules(replica: Replica, etcd_prefix: str) -> None:
    fence = await fence_of(replica, etcd_prefix)
    batch = job_pb2.Job(id="cron", namespace="default", type=job_pb2.JOB_TYPE_BATCH,
                      datacenters=["dc1"],
                        task_groups=[job_pb2.TaskGroup(name="run", count=1)])
    await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=batch))
    await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=web_job()))
    await replica.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
        ev("done", COMPLETE), ev("busy", PENDING), ev("mixed", COMPLETE),
        ev("cron-done", COMPLETE, job_id="cron", eval_type="batch"),
        ev("cron-ran", COMPLETE, job_id="cron", eval_type="batch"),
        ev("gone-batch", COMPLETE, job_id="nojob", eval_type="batch"),
    ]), metadata=fence.metadata())  # terminal statuses are leader writes
    await replica.stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[
        alloc("a-done", "done"), alloc("a-mixed-stopped", "mixed"),
        alloc("a-mixed-live", "mixed", terminal=False),
        alloc("a-cron", "cron-ran", job_id="cron"),
    ]))
    before = await ids(replica, "evaluations")
    created = time.time()
    # Too young: a cutoff before they were written collects nothing.
    r = await gc(replica, fence, EVALS, created - 3600)
    assert (r.evaluations, r.allocations, r.done) == (0, 0, True)
    assert await ids(replica, "evaluations") == before
    r = await gc(replica, fence, EVALS, created + 60)
    assert (r.evaluations, r.allocations) == (3, 2)
    assert r.txns == 1 and r.largest_txn <= 128
    left = await ids(replica, "evaluations")
    # Kept: a pending one, one with a live allocation, the live batch job's
    # one with an allocation of its current version (and its job-register
    # eval, pending); collected: "done" with its allocation, the batch evals
    # of a job that is gone and of the live job with no allocation (Nomad's
    # olderVersionTerminalAllocs: else one stays per register), the mixed
    # eval's stopped allocation.
    assert {"busy", "mixed", "cron-ran"} <= left
    assert not {"done", "gone-batch", "cron-done"} & left
    assert await ids(replica, "allocations") == {"a-mixed-live", "a-cron"}
    # A new version of the live job: its older version's eval goes with it.
    batch.meta["v"] = "2"
    await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=batch))
    r = await gc(replica, fence, EVALS, time.time() + 60)
    assert (r.evaluations, r.allocations) == (1, 1)
    assert "cron-ran" not in await ids(replica, "evaluations")
    assert await ids(replica, "allocations") == {"a-mixed-live"}


async def test_eval_gc_walks_with_a_cursor_in_bounded_txns(replica: Replica,
                                                           etcd_prefix: str) -> None:
    fence = await fence_of(replica, etcd_prefix)
    for start in range(0, 300, 100):
        await replica.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[ev(f"e{i:03d}", COMPLETE) for i in range(start, start + 100)]),
            metadata=fence.metadata())
    cutoff = time.time() + 60
    r = await gc(replica, fence, EVALS, cutoff, max_examined=250)
    assert (r.examined, r.evaluations, r.done) == (250, 250, False)
    assert r.txns == 3 and r.largest_txn == 120 + 1  # 120 deletes + the revision marker
    r2 = await gc(replica, fence, EVALS, cutoff, max_examined=250,
                  after_index=r.after_index, after_key=r.after_key)
    assert (r2.examined, r2.evaluations, r2.done) == (50, 50, True)
    assert await ids(replica, "evaluations") == set()


async def test_deployment_job_and_node_gc(replica: Replica, etcd_prefix: str) -> None:
    fence = await fence_of(replica, etcd_prefix)
    svc = job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(
                          name="g", count=1, update=job_pb2.UpdateStrategy(max_parallel=1))])
    r1 = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=svc))
    svc.meta["v"] = "2"  # a changed spec: a new version, whose deployment cancels d1
    r2 = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=svc))
    await replica.stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[
        allocation_pb2.Allocation(id="w1", job_id="web", deployment_id=r2.deployment_id,
                                  eval_id=r2.eval_id, node_id="up")]))
    now = time.time() + 60
    r = await gc(replica, fence, state_pb2.GC_KIND_DEPLOYMENTS, now)
    assert r.deployments == 1  # the cancelled one; the running one stays
    assert await ids(replica, "deployments") == {r2.deployment_id}
    assert r1.deployment_id != r2.deployment_id

    # Jobs: a live service job stays; a stopped one whose allocation is still
    # running stays; once that allocation is stopped, the dead job goes whole.
    r = await gc(replica, fence, state_pb2.GC_KIND_JOBS, now)
    assert r.jobs == 0
    await replica.stub.DeregisterJob(state_pb2.DeregisterJobRequest(id="web"))
    evs = await replica.stub.ListEvaluations(state_pb2.ListEvaluationsRequest())
    for e in evs.evaluations:
        e.status = COMPLETE
    await replica.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=evs.evaluations), metadata=fence.metadata())
    r = await gc(replica, fence, state_pb2.GC_KIND_JOBS, now)
    assert r.jobs == 0  # w1 still runs
    await replica.stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
        state_pb2.AllocationUpdate(id="w1",
                                   client_status=allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE)]))
    r = await gc(replica, fence, state_pb2.GC_KIND_JOBS, now)
    assert (r.jobs, r.job_versions, r.evaluations, r.allocations, r.deployments) == (
        1, 3, 3, 1, 1)
    for what in ("jobs", "evaluations", "allocations", "deployments"):
        assert await ids(replica, what) == set(), what

    # Nodes: down long enough and nothing live on it.
    old = time.time() - 7200
    for node_id, status in (("down-old", node_pb2.NODE_STATUS_DOWN),
                            ("down-busy", node_pb2.NODE_STATUS_DOWN),
                            ("ready-old", node_pb2.NODE_STATUS_READY)):
        await replica.stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
            id=node_id, status=status, status_updated_at=ts(old))))
    await replica.stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
        id="down-new", status=node_pb2.NODE_STATUS_DOWN)))
    await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=web_job()))
    await replica.stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[
        alloc("busy", "x", node_id="down-busy", terminal=False)]))
    r = await gc(replica, fence, state_pb2.GC_KIND_NODES, time.time() - 3600)
    assert r.nodes == 1
    assert await ids(replica, "nodes") == {"down-busy", "ready-old", "down-new"}

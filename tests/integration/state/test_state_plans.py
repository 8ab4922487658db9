"""SubmitPlan (one txn, PLAN_STALE, partial commit), UpdateNodeStatus and the register
semantics the scheduler relies on, against a real etcd."""

from __future__ import annotations

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.rpc.remote import error_info

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP


def _job(count: int = 2, canary: int = 0, image: str = "v1") -> job_pb2.Job:
    tg = job_pb2.TaskGroup(
        name="g", count=count, update=job_pb2.UpdateStrategy(max_parallel=1, canary=canary),
        tasks=[job_pb2.Task(name="t", driver="sim", config={"image": image})])
    return job_pb2.Job(id="web", namespace="default", datacenters=["dc1"], task_groups=[tg])


async def _node(stub, node_id: str, cpu: int = 1000, mem: int = 1000) -> int:
    resp = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
        id=node_id, status=node_pb2.NODE_STATUS_READY,
        resources=job_pb2.Resources(cpu=cpu, memory_mb=mem))))
    got = await stub.GetNode(state_pb2.GetNodeRequest(id=node_id))
    assert got.node.modify_index == resp.index
    return got.node.modify_index


def _alloc(aid: str, node: str, cpu: int = 100, mem: int = 300) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(
        id=aid, namespace="default", job_id="web", task_group="g", node_id=node,
        name=f"web.g[{aid}]", desired_status=RUN,
        resources=job_pb2.Resources(cpu=cpu, memory_mb=mem))


async def _job_index(stub) -> int:
    got = await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="web"))
    return int(got.job.modify_index)


def _reason(err: grpc.aio.AioRpcError) -> str:
    info = error_info(err)
    return info.reason if info else ""


async def test_plan_places_then_refuses_stale(replica) -> None:
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    n1 = await _node(stub, "n1")
    job_index = await _job_index(stub)
    resp = await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=job_index,
        node_indexes={"n1": n1}, placements=[_alloc("a1", "n1"), _alloc("a2", "n1")]))
    assert resp.placed == 2
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="default"))
    assert sorted(a.id for a in allocs.allocations) == ["a1", "a2"]
    # The same plan again read no allocations: the set moved, PLAN_STALE, nothing written.
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
            eval_id="e2", namespace="default", job_id="web", job_index=job_index,
            node_indexes={"n1": n1}, placements=[_alloc("a3", "n1")]))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert _reason(err.value) == "PLAN_STALE"
    # A stop with the indexes read: accepted, and written with the placement at once.
    idx = {a.id: a.modify_index for a in allocs.allocations}
    stop = allocation_pb2.Allocation()
    stop.CopyFrom(next(a for a in allocs.allocations if a.id == "a1"))
    stop.desired_status = STOP
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e3", namespace="default", job_id="web", job_index=job_index,
        alloc_indexes=idx, node_indexes={"n1": n1}, updates=[stop],
        placements=[_alloc("a3", "n1")]))
    got = await stub.GetAllocation(state_pb2.GetAllocationRequest(namespace="default", id="a1"))
    assert got.allocation.desired_status == STOP


async def test_a_plan_writing_one_allocation_twice_is_refused_naming_it(replica) -> None:
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    n1 = await _node(stub, "n1")
    job_index = await _job_index(stub)
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=job_index,
        node_indexes={"n1": n1}, placements=[_alloc("a1", "n1")]))
    got = (await stub.GetAllocation(state_pb2.GetAllocationRequest(
        namespace="default", id="a1"))).allocation
    stop = allocation_pb2.Allocation()
    stop.CopyFrom(got)
    stop.desired_status = STOP
    with pytest.raises(grpc.aio.AioRpcError) as err:  # an in-place update and a stop of a1
        await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
            eval_id="e2", namespace="default", job_id="web", job_index=job_index,
            alloc_indexes={"a1": got.modify_index}, node_indexes={"n1": n1},
            updates=[got, stop]))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "allocation 'a1' twice" in (err.value.details() or "")
    after = await stub.GetAllocation(state_pb2.GetAllocationRequest(namespace="default", id="a1"))
    assert after.allocation.desired_status == RUN


async def test_plan_partially_committed_when_a_node_is_full_or_draining(replica) -> None:
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    n1 = await _node(stub, "n1", cpu=150, mem=1000)
    n2 = await _node(stub, "n2")
    job_index = await _job_index(stub)
    # n1 has room for one of the two: Nomad refuses the node's whole part.
    resp = await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=job_index,
        node_indexes={"n1": n1, "n2": n2},
        placements=[_alloc("a1", "n1"), _alloc("a2", "n1"), _alloc("a3", "n2")]))
    assert resp.placed == 1 and resp.refresh_index == resp.index
    assert [(r.node_id, r.reason, sorted(r.placement_ids)) for r in resp.refused] == [
        ("n1", "node has no room: cpu", ["a1", "a2"])]
    allocs = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="default"))
    assert [a.id for a in allocs.allocations] == ["a3"]
    await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(id="n1", drain=True))
    resp = await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=job_index,
        alloc_indexes={a.id: a.modify_index for a in allocs.allocations},
        node_indexes={"n1": n1}, placements=[_alloc("a1", "n1")]))
    assert resp.placed == 0 and [(r.node_id, r.reason) for r in resp.refused] == [
        ("n1", "node is not eligible")]


async def test_node_down_marks_allocations_lost_and_evaluates(replica) -> None:
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    n1 = await _node(stub, "n1")
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=await _job_index(stub),
        node_indexes={"n1": n1}, placements=[_alloc("a1", "n1")]))
    beat = await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
        id="n1", status=node_pb2.NODE_STATUS_READY))
    assert beat.lost == 0 and not beat.eval_ids  # a heartbeat changes nothing
    down = await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
        id="n1", status=node_pb2.NODE_STATUS_DOWN))
    assert down.lost == 1 and len(down.eval_ids) == 1
    got = await stub.GetAllocation(state_pb2.GetAllocationRequest(namespace="default", id="a1"))
    assert got.allocation.client_status == allocation_pb2.ALLOC_CLIENT_STATUS_LOST
    ev = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=down.eval_ids[0]))
    assert ev.evaluation.triggered_by == "node-update" and ev.evaluation.job_id == "web"


async def test_node_ready_unblocks_blocked_evaluations(replica) -> None:
    stub = replica.stub
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
        evaluation_pb2.Evaluation(id="b1", namespace="default", type="service", job_id="web",
                                  status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)]))
    await _node(stub, "n9")
    ev = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="b1"))
    assert ev.evaluation.status == evaluation_pb2.EVALUATION_STATUS_PENDING


async def test_register_semantics(replica) -> None:
    stub = replica.stub
    first = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(canary=1)))
    d = await stub.GetDeployment(state_pb2.GetDeploymentRequest(
        namespace="default", id=first.deployment_id))
    assert d.deployment.task_groups["g"].desired_canaries == 0  # not on the first version
    job = (await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="web"))).job
    assert job.task_groups[0].tasks[0].resources.cpu == 100
    assert job.task_groups[0].tasks[0].resources.memory_mb == 300
    again = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(canary=1)))
    assert again.version == first.version and not again.deployment_id and again.eval_id
    d = await stub.GetDeployment(state_pb2.GetDeploymentRequest(
        namespace="default", id=first.deployment_id))
    assert d.deployment.status == 1  # still running, not cancelled
    changed = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(canary=1, image="v2")))
    assert changed.version == first.version + 1
    d2 = await stub.GetDeployment(state_pb2.GetDeploymentRequest(
        namespace="default", id=changed.deployment_id))
    assert d2.deployment.task_groups["g"].desired_canaries == 1


async def test_related_evaluations_walk_the_whole_chain(replica) -> None:
    stub = replica.stub

    def ev(eid: str, *, previous_eval: str = "", blocked_eval: str = "",
           ) -> evaluation_pb2.Evaluation:
        return evaluation_pb2.Evaluation(id=eid, namespace="default", type="service",
                                         job_id="chain", previous_eval=previous_eval,
                                         blocked_eval=blocked_eval)

    # e1 <- e2 (previous) <- e3 (previous), e3 blocked -> e4; e9: another chain
    for batch in ([ev("e1")], [ev("e2", previous_eval="e1")],
                  [ev("e3", previous_eval="e2", blocked_eval="e4")], [ev("e4"), ev("e9")]):
        await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=batch))
    r = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="e1", include_related=True))
    assert [e.id for e in r.related] == ["e2", "e3", "e4"]



async def test_a_report_refuses_only_plans_that_update_that_allocation(replica) -> None:
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    n1 = await _node(stub, "n1")
    job_index = await _job_index(stub)
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=job_index,
        node_indexes={"n1": n1}, placements=[_alloc("a1", "n1"), _alloc("a2", "n1")]))
    read = {a.id: a for a in (await stub.ListAllocations(
        state_pb2.ListAllocationsRequest(namespace="default"))).allocations}
    idx = {k: a.modify_index for k, a in read.items()}
    await stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
        state_pb2.AllocationUpdate(namespace="default", id="a2", healthy=True)]))
    stop2 = allocation_pb2.Allocation()
    stop2.CopyFrom(read["a2"])
    stop2.desired_status = STOP
    with pytest.raises(grpc.aio.AioRpcError) as err:  # a2 changed since it was read
        await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
            eval_id="e2", namespace="default", job_id="web", job_index=job_index,
            alloc_indexes=idx, updates=[stop2]))
    assert _reason(err.value) == "PLAN_STALE"
    stop1 = allocation_pb2.Allocation()
    stop1.CopyFrom(read["a1"])
    stop1.desired_status = STOP
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(  # a1 did not: accepted
        eval_id="e3", namespace="default", job_id="web", job_index=job_index,
        alloc_indexes=idx, updates=[stop1]))


async def test_node_secret_binds_client_updates_to_their_node(replica) -> None:
    """A real replica (ACLs off): registration returns the node's secret
    once; a heartbeat or an allocation update presenting another node's
    secret is refused NODE_SECRET_MISMATCH and writes nothing; the node's
    own secret passes; re-registering with a wrong one is refused."""
    from drover.acl.node_secret import node_secret_metadata
    stub, store = replica.stub, replica.store
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    secrets = {}
    for nid in ("s1", "s2"):
        resp = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
            id=nid, status=node_pb2.NODE_STATUS_READY,
            resources=job_pb2.Resources(cpu=1000, memory_mb=1000))))
        assert resp.secret_id
        secrets[nid] = resp.secret_id
    got = await stub.GetNode(state_pb2.GetNodeRequest(id="s1"))
    assert got.node.secret_sha256 and secrets["s1"].encode() not in got.node.SerializeToString()
    n1 = got.node.modify_index
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=await _job_index(stub),
        node_indexes={"s1": n1}, placements=[_alloc("sa1", "s1")]))
    before = await store.revision()
    as_s2 = node_secret_metadata(secrets["s2"])
    calls = [
        stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
            state_pb2.AllocationUpdate(id="sa1", healthy=True)]), metadata=as_s2),
        stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(id="s1", heartbeat=True),
                              metadata=as_s2),
        stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(id="s1")),
                        metadata=as_s2),
    ]
    for call in calls:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert _reason(err.value) == "NODE_SECRET_MISMATCH"
    assert await store.revision() == before
    as_s1 = node_secret_metadata(secrets["s1"])
    await stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
        state_pb2.AllocationUpdate(id="sa1", healthy=True)]), metadata=as_s1)
    await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(id="s1", heartbeat=True),
                                metadata=as_s1)
    again = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=got.node), metadata=as_s1)
    assert again.secret_id == ""  # returned once


async def test_many_nodes_report_in_one_update_allocations_txn(replica) -> None:
    """A real replica: one UpdateAllocations with ``nodes`` carries two
    nodes' reports, each group with its node's secret, in one txn (one
    revision); a group holding another node's secret, or reporting an
    allocation of another node, is refused and writes nothing."""
    stub, store = replica.stub, replica.store
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job()))
    secrets, indexes = {}, {}
    for nid in ("m1", "m2"):
        resp = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
            id=nid, status=node_pb2.NODE_STATUS_READY,
            resources=job_pb2.Resources(cpu=1000, memory_mb=1000))))
        secrets[nid] = resp.secret_id
        indexes[nid] = (await stub.GetNode(state_pb2.GetNodeRequest(id=nid))).node.modify_index
    await stub.SubmitPlan(state_pb2.SubmitPlanRequest(
        eval_id="e1", namespace="default", job_id="web", job_index=await _job_index(stub),
        node_indexes=indexes, placements=[_alloc("ma1", "m1"), _alloc("ma2", "m2")]))

    def group(nid: str, alloc_id: str, secret: str) -> state_pb2.NodeAllocationUpdates:
        return state_pb2.NodeAllocationUpdates(node_id=nid, secret_id=secret, updates=[
            state_pb2.AllocationUpdate(id=alloc_id, healthy=True)])

    before = await store.revision()
    for bad, reason in (([group("m1", "ma1", secrets["m1"]), group("m2", "ma2", secrets["m1"])],
                         "NODE_SECRET_MISMATCH"),
                        ([group("m1", "ma2", secrets["m1"])], None)):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(nodes=bad))
        if reason:
            assert _reason(err.value) == reason
        else:
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert await store.revision() == before
    resp = await stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(nodes=[
        group("m1", "ma1", secrets["m1"]), group("m2", "ma2", secrets["m2"])]))
    assert resp.index == before + 1  # both nodes' reports: one txn
    for aid in ("ma1", "ma2"):
        got = await stub.GetAllocation(state_pb2.GetAllocationRequest(id=aid))
        assert got.allocation.deployment_status.healthy

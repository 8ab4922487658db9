"""drover.state.jobs.core.purge: a purge waits for allocations a node still runs."""

from __future__ import annotations

from state_core_data import context, ready_node, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.state.core import codec
from drover.state.jobs.core import purge

C = allocation_pb2


def _alloc(aid: str, client: int, node: str = "n1") -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(
        id=aid, namespace="default", job_id="web", task_group="g", node_id=node,
        desired_status=C.ALLOC_DESIRED_STATUS_STOP, client_status=client)  # type: ignore[arg-type]


def test_only_allocations_a_live_node_may_still_run_block_a_purge() -> None:
    down = node_pb2.Node(id="n2", status=node_pb2.NODE_STATUS_DOWN)
    v = view([(codec.NODES, ready_node(), 1, 1), (codec.NODES, down, 2, 2),
              (codec.ALLOCATIONS, _alloc("run", C.ALLOC_CLIENT_STATUS_RUNNING), 3, 3),
              (codec.ALLOCATIONS, _alloc("done", C.ALLOC_CLIENT_STATUS_COMPLETE), 4, 4),
              (codec.ALLOCATIONS, _alloc("ondown", C.ALLOC_CLIENT_STATUS_RUNNING, "n2"), 5, 5),
              (codec.ALLOCATIONS, _alloc("gone", C.ALLOC_CLIENT_STATUS_PENDING, "n9"), 6, 6)])
    assert [a.id for a in purge.blockers(v, "default", "web")] == ["run"]


def test_a_purge_that_must_wait_stops_the_job_and_says_what_will_go() -> None:
    job = stored(service_job(), 1)
    v = view([(codec.JOBS, job, 1, 8), (codec.NODES, ready_node(), 2, 2),
              (codec.JOB_VERSIONS, job, 3, 3),
              (codec.ALLOCATIONS, _alloc("run", C.ALLOC_CLIENT_STATUS_RUNNING), 4, 4)])
    plan = purge.plan_stop_for_purge(v, context(), "default", "web")
    at = [e.kind for e in plan.events].index(codec.JOBS)
    stopped = codec.decode(codec.JOBS, plan.ops[at].value, 1, 9)  # type: ignore[union-attr]
    assert stopped.stop and stopped.purge_requested and stopped.version == 2
    assert not any(e.op == "delete" for e in plan.events)  # nothing is removed yet
    resp = plan.respond(9)
    assert resp.purge_pending and resp.stopped_allocations == 1 and resp.eval_id
    assert (resp.pending_versions, resp.pending_allocations) == (2, 1)


def test_a_stopped_job_is_only_marked() -> None:
    job = stored(service_job(), 1)
    job.stop = True
    v = view([(codec.JOBS, job, 1, 8), (codec.NODES, ready_node(), 2, 2),
              (codec.ALLOCATIONS, _alloc("run", C.ALLOC_CLIENT_STATUS_RUNNING), 4, 4)])
    plan = purge.plan_stop_for_purge(v, context(), "default", "web")
    assert [e.kind for e in plan.events] == [codec.JOBS]
    assert codec.decode(codec.JOBS, plan.ops[0].value, 1, 9).purge_requested  # type: ignore[union-attr]
    assert plan.respond(9).stopped_allocations == 0

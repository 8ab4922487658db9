"""drover.state.jobs.core.purge: what a node still runs, and the purge of a running job."""

from __future__ import annotations

from state_core_data import context, key, ready_node, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.coord.kv import Compare
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


def test_a_purge_of_a_running_job_deletes_it_at_once_with_a_deregister_evaluation() -> None:
    """Nomad's Job.Deregister with purge: DeleteJob (the job and its
    versions) in the txn that writes the job-deregister evaluation; the
    allocations stay for the scheduler to stop. Was: the job was stopped,
    marked purge_requested and removed once its allocations had stopped."""
    job = stored(service_job(), 1)
    v = view([(codec.JOBS, job, 1, 8), (codec.NODES, ready_node(), 2, 2),
              (codec.JOB_VERSIONS, job, 3, 3),
              (codec.ALLOCATIONS, _alloc("run", C.ALLOC_CLIENT_STATUS_RUNNING), 4, 4)])
    plan = purge.plan_stop_for_purge(v, context(), "default", "web")
    ops = {(e.kind, e.op) for e in plan.events}
    assert ops == {(codec.EVALUATIONS, "put"), (codec.JOBS, "delete"),
                   (codec.JOB_VERSIONS, "delete")}
    assert Compare(key(codec.JOBS, "default", "web"), "mod", 8) in plan.compares
    ev = codec.decode(codec.EVALUATIONS, plan.ops[0].value, 9, 9)  # type: ignore[union-attr]
    assert (ev.triggered_by, ev.job_id) == ("job-deregister", "web")
    resp = plan.respond(9)
    assert not resp.purge_pending and resp.stopped_allocations == 1 and resp.eval_id == ev.id
    assert (resp.purged_versions, resp.pending_allocations) == (1, 1)

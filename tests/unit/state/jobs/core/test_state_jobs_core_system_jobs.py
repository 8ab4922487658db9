"""drover.state.jobs.core.system_jobs: a node that can take allocations gets an
evaluation of every system job of its datacenter, in the node's txn."""

from __future__ import annotations

from state_core_data import context, ready_node, service_job, stored, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import job_pb2, node_pb2
from drover.state.core import codec
from drover.state.nodes.core import nodes


def _system(job_id: str, dcs: list[str], stop: bool = False) -> job_pb2.Job:
    job = stored(service_job(), 0)
    job.id, job.type, job.stop = job_id, job_pb2.JOB_TYPE_SYSTEM, stop
    del job.datacenters[:]
    job.datacenters.extend(dcs)
    return job


def _evals(plan: object) -> list[object]:
    return [codec.decode(codec.EVALUATIONS, op.value, 9, 9)  # type: ignore[attr-defined]
            for op, e in zip(plan.ops, plan.events, strict=True)  # type: ignore[attr-defined]
            if e.kind == codec.EVALUATIONS]


def _jobs() -> list[tuple[str, object, int, int]]:
    return [(codec.JOBS, _system("agent", ["dc1"]), 1, 1),
            (codec.JOBS, _system("everywhere", ["*"]), 2, 2),
            (codec.JOBS, _system("elsewhere", ["dc2"]), 3, 3),
            (codec.JOBS, _system("stopped", ["dc1"], stop=True), 4, 4),
            (codec.JOBS, stored(service_job(), 0), 5, 5)]


def test_a_node_registering_ready_evaluates_the_system_jobs_of_its_datacenter() -> None:
    plan = nodes.plan_upsert_node(view(_jobs()), context(), ready_node(datacenter="dc1"))
    evs = _evals(plan)
    assert sorted(e.job_id for e in evs) == ["agent", "everywhere"]  # type: ignore[attr-defined]
    assert {(e.type, e.triggered_by, e.node_id) for e in evs} == {  # type: ignore[attr-defined]
        ("system", "node-update", "n1")}


def test_a_node_back_to_ready_evaluates_them_too_and_says_so() -> None:
    down = ready_node(datacenter="dc1")
    down.status = node_pb2.NODE_STATUS_DOWN
    v = view([*_jobs(), (codec.NODES, down, 6, 6)])
    req = state_pb2.UpdateNodeStatusRequest(id="n1", status=node_pb2.NODE_STATUS_READY)
    plan = nodes.plan_node_status(v, context(), req)
    assert len(plan.respond(9).eval_ids) == 2

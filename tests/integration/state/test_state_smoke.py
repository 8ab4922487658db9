"""RegisterJob end to end, and the eval list it produces."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import job_pb2


async def test_register_then_read(replica) -> None:
    job = job_pb2.Job(id="web", namespace="default", datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(name="g", count=2,
                                                     update=job_pb2.UpdateStrategy(max_parallel=1))])
    resp = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    assert resp.eval_id and resp.deployment_id and resp.version == 0
    got = await replica.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="web"))
    assert got.job.job_modify_index == resp.job_modify_index == resp.index
    assert got.meta.index >= resp.index
    evs = await replica.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(namespace="*"))
    assert [e.id for e in evs.evaluations] == [resp.eval_id]
    assert evs.evaluations[0].deployment_id == resp.deployment_id

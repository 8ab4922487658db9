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


async def test_nomads_defaults_are_filled_in_on_register_and_visible_in_get_job(replica) -> None:
    job = job_pb2.Job(id="bare", task_groups=[job_pb2.TaskGroup(name="g")])
    resp = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    assert resp.deployment_id  # the default update strategy rolls the group
    got = (await replica.stub.GetJob(state_pb2.GetJobRequest(namespace="default",
                                                             id="bare"))).job
    assert (got.priority, got.type, list(got.datacenters)) == (50, job_pb2.JOB_TYPE_SERVICE,
                                                               ["*"])
    tg = got.task_groups[0]
    assert tg.count == 1 and tg.update.max_parallel == 1
    assert (tg.update.min_healthy_time.seconds, tg.update.healthy_deadline.seconds,
            tg.update.progress_deadline.seconds) == (10, 300, 600)

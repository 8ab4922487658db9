"""Input the state service used to accept silently, now refused: filters
that cannot be evaluated, unknown Subscribe topics, jobs with nothing to run
or nowhere to run it, allocations of jobs and deployments that do not exist.
Each refusal is INVALID_ARGUMENT/NOT_FOUND with ErrorInfo and writes nothing."""

from __future__ import annotations

from typing import Any, cast

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.rpc.remote import error_info


async def _refused(call: Any, code: grpc.StatusCode) -> Any:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    assert info.value.code() == code, info.value.details()
    detail = error_info(info.value)
    assert detail is not None
    return detail


def _job(job_id: str, **kw: Any) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="g", count=1, update=job_pb2.UpdateStrategy(max_parallel=1))
    fields: dict[str, Any] = {"datacenters": ["dc1"], "task_groups": [tg], **kw}
    return job_pb2.Job(id=job_id, **fields)


@pytest.mark.parametrize("expression", ["1/0 == 1", 'job_id.matches("(")'])
async def test_filters_that_cannot_be_evaluated_are_refused(replica: Any, expression: str) -> None:
    stub = replica.stub
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("web")))
    for call in (
        stub.ListEvaluations(state_pb2.ListEvaluationsRequest(filter=expression)),
        stub.CountEvaluations(state_pb2.CountEvaluationsRequest(filter=expression)),
        stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(filter=expression,
                                                                  dry_run=True)),
        stub.ListJobs(state_pb2.ListJobsRequest(filter=expression)),
    ):
        detail = await _refused(call, grpc.StatusCode.INVALID_ARGUMENT)
        assert detail.reason == "INVALID_FILTER" and detail.metadata["field"] == "filter"


async def test_subscribe_with_an_unknown_topic_is_refused(replica: Any) -> None:
    stream = replica.stub.Subscribe(state_pb2.SubscribeRequest(
        topics=[state_pb2.TOPIC_JOB, cast(state_pb2.Topic, 42)]))
    detail = await _refused(stream.read(), grpc.StatusCode.INVALID_ARGUMENT)
    assert detail.metadata["field"] == "topics[1]"


@pytest.mark.parametrize("job,field", [
    (job_pb2.Job(id="nogroups", datacenters=["dc1"]), "job.task_groups"),
    # No datacenters is Nomad's ["*"] (drover.jobspec.defaults); an empty name is refused.
    (job_pb2.Job(id="emptydc", datacenters=[""],
                 task_groups=[job_pb2.TaskGroup(name="g", count=1)]), "job.datacenters[0]"),
])
async def test_register_refuses_a_job_with_nothing_or_nowhere_to_run(
    replica: Any, job: job_pb2.Job, field: str,
) -> None:
    before = (await replica.stub.ListJobs(state_pb2.ListJobsRequest())).meta.index
    detail = await _refused(replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job)),
                            grpc.StatusCode.INVALID_ARGUMENT)
    assert detail.metadata["field"] == field
    after = await replica.stub.ListJobs(state_pb2.ListJobsRequest())
    assert not after.jobs and after.meta.index == before


async def test_allocations_of_unknown_jobs_deployments_or_namespaces_are_refused(
    replica: Any,
) -> None:
    stub = replica.stub
    reg = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("web")))
    other = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("api")))
    cases = [
        (allocation_pb2.Allocation(id="a1", job_id="nope"), "allocations[0].job_id"),
        (allocation_pb2.Allocation(id="a1", job_id="web", namespace="elsewhere"),
         "allocations[0].job_id"),
        (allocation_pb2.Allocation(id="a1", job_id="web", deployment_id="nope"),
         "allocations[0].deployment_id"),
    ]
    for alloc, field in cases:
        detail = await _refused(
            stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[alloc])),
            grpc.StatusCode.NOT_FOUND)
        assert detail.metadata["field"] == field
    # A deployment of another job is no better.
    alloc = allocation_pb2.Allocation(id="a1", job_id="web", deployment_id=other.deployment_id)
    detail = await _refused(
        stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[alloc])),
        grpc.StatusCode.INVALID_ARGUMENT)
    assert detail.metadata["field"] == "allocations[0].deployment_id"
    listed = await stub.ListAllocations(state_pb2.ListAllocationsRequest(namespace="*"))
    assert not listed.allocations
    ok = allocation_pb2.Allocation(id="a1", job_id="web", deployment_id=reg.deployment_id)
    await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[ok]))

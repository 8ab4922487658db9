"""A job's status through a deployment's writes: real etcd, the real state
service and watcher, the test placing and reporting (scripts/smoke.sh's steps).

Nomad's rule (``getJobStatus``): a non-terminal allocation makes the job
running; else a non-terminal evaluation makes it pending. A running canary
keeps the job running through its health report and its promotion; once
the scheduler stops it (as Nomad's does when its node is gone: lost), the
promotion's evaluation, not yet processed, makes the job pending.
"""

from __future__ import annotations

from deployments_harness import Scheduler, StateReplica, Watcher, service_job

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2


async def _job(state: StateReplica, job_id: str) -> job_pb2.Job:
    resp = await state.stub.GetJob(state_pb2.GetJobRequest(namespace="default", id=job_id))
    return resp.job  # type: ignore[no-any-return]


async def test_a_running_canary_keeps_its_job_running_until_it_is_stopped(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    reg = await scheduler.register(service_job("status", count=2, canary=1))
    assert (await _job(state, "status")).status == job_pb2.JOB_STATUS_PENDING
    d = await scheduler.deployment(reg.deployment_id)
    [canary] = await scheduler.place(d, 1, canary=True)
    job = await _job(state, "status")
    assert (job.status, job.summary["web"].running) == (job_pb2.JOB_STATUS_RUNNING, 1)

    await scheduler.health([canary])
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].healthy_allocs == 1)
    assert (await _job(state, "status")).status == job_pb2.JOB_STATUS_RUNNING
    resp = await watcher.stub.PromoteDeployment(
        deployments_pb2.PromoteDeploymentRequest(deployment_id=d.id, all=True))
    assert resp.result.deployment.task_groups["web"].promoted and resp.result.eval_id
    job = await _job(state, "status")
    assert (job.status, job.summary["web"].running) == (job_pb2.JOB_STATUS_RUNNING, 1)

    got = await state.stub.GetAllocation(state_pb2.GetAllocationRequest(namespace="default",
                                                                         id=canary))
    lost = got.allocation
    lost.desired_status = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    lost.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
    await state.stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[lost]))
    job = await _job(state, "status")
    assert job.status == job_pb2.JOB_STATUS_PENDING  # the promotion's evaluation waits
    assert (job.summary["web"].running, job.summary["web"].lost) == (0, 1)

"""An unhealthy allocation that does not fail its deployment is marked to
reschedule, with its evaluation, through the fenced
UpdateAllocDesiredTransition (real etcd and state service)."""

from __future__ import annotations

from deployments_harness import Scheduler, StateReplica, Watcher, service_job
from polling import eventually

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2

RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED


async def marked(state: StateReplica, alloc_id: str) -> bool:
    got = await state.stub.GetAllocation(
        state_pb2.GetAllocationRequest(namespace="default", id=alloc_id))
    return bool(got.allocation.desired_transition.reschedule)


async def test_unhealthy_alloc_is_marked_with_an_evaluation(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    reg = await scheduler.register(service_job("shop", count=2, progress_deadline=600))
    d = await scheduler.deployment(reg.deployment_id)
    ok, bad = await scheduler.place(d, 2)
    await scheduler.health([ok])
    await scheduler.health([bad], healthy=False)
    await eventually(lambda: marked(state, bad), what="reschedule mark")
    assert not await marked(state, ok)
    evals = await state.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="default", filter='triggered_by == "deployment-watcher"'))
    assert any(e.deployment_id == d.id and e.job_id == "shop" for e in evals.evaluations)
    after = await scheduler.deployment(d.id)
    assert after.status == RUNNING  # replaced; the progress deadline decides


async def test_no_progress_deadline_fails_without_marking(
    watcher: Watcher, scheduler: Scheduler, state: StateReplica
) -> None:
    job = service_job("shop", count=1)
    job.task_groups[0].update.progress_deadline.FromSeconds(0)
    reg = await scheduler.register(job)
    d = await scheduler.deployment(reg.deployment_id)
    assert not d.task_groups["web"].progress_deadline.ToNanoseconds()
    (bad,) = await scheduler.place(d, 1)
    await scheduler.health([bad], healthy=False)
    await scheduler.wait_deployment(d.id, lambda x: x.status == FAILED, what="failed")
    assert not await marked(state, bad)

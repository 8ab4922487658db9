"""A follow-up evaluation is written in the same txn as the progress that needs it.

Before, the watcher wrote the new healthy count first and queued the
follow-up in a batcher for a later, separate write: a stream that broke or
a failover in between lost it, and the rollout stalled until its progress
deadline. Now both are one UpdateDeployment: the evaluation's create index
is the deployment's modify index of that write.
"""

from __future__ import annotations

from deployments_harness import Scheduler, StateReplica, Watcher, service_job

from drover.api.state.v1 import state_pb2


async def _follow_up_of(state: StateReplica, scheduler: Scheduler, deployment_id: str,
                       healthy: int) -> None:
    """The follow-up of the write that recorded ``healthy`` healthy allocations."""
    progressed = await scheduler.wait_deployment(
        deployment_id, lambda x: x.task_groups["web"].healthy_allocs == healthy)
    evals = await state.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="*", filter=f'deployment_id == "{deployment_id}"'))
    follow_ups = [e for e in evals.evaluations if e.triggered_by == "deployment-watcher"]
    assert any(e.create_index == progressed.modify_index for e in follow_ups), (
        f"no follow-up written with the progress at {progressed.modify_index}: "
        f"{[(e.id, e.create_index) for e in follow_ups]}")


async def test_the_follow_up_is_created_by_the_progress_write_itself(
        watcher: Watcher, scheduler: Scheduler, state: StateReplica) -> None:
    reg = await scheduler.register(service_job("rolling", count=3, max_parallel=1))
    d = await scheduler.deployment(reg.deployment_id)
    first = await scheduler.place(d, 1)
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].placed_allocs == 1)
    await scheduler.health(first)
    await _follow_up_of(state, scheduler, d.id, 1)
    second = await scheduler.place(d, 1)
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].placed_allocs == 2)
    await scheduler.health(second)
    await _follow_up_of(state, scheduler, d.id, 2)

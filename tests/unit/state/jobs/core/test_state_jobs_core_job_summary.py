"""drover.state.jobs.core.job_summary: Nomad's per-group counting, and the
summary kept through follow() as allocations move and the job is rewritten."""

from __future__ import annotations

from state_core_data import context, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder
from drover.state.jobs.core import job_status, job_summary
from drover.state.jobs.core import register as job_plans

C = allocation_pb2
PENDING, RUNNING, FAILED, COMPLETE, LOST = (
    C.ALLOC_CLIENT_STATUS_PENDING, C.ALLOC_CLIENT_STATUS_RUNNING, C.ALLOC_CLIENT_STATUS_FAILED,
    C.ALLOC_CLIENT_STATUS_COMPLETE, C.ALLOC_CLIENT_STATUS_LOST)


def _counts(tg: job_pb2.TaskGroupSummary) -> tuple[int, ...]:
    return (tg.queued, tg.starting, tg.running, tg.failed, tg.complete, tg.lost)


def _summary() -> job_pb2.Job:
    job = job_pb2.Job(id="web")
    job.summary["g"].queued = 2
    return job


def test_a_new_pending_allocation_is_starting_and_no_longer_queued() -> None:
    job = _summary()
    assert job_summary.count_alloc(job.summary, "g", None, PENDING)
    assert _counts(job.summary["g"]) == (1, 1, 0, 0, 0, 0)
    job_summary.count_alloc(job.summary, "g", None, PENDING)
    job_summary.count_alloc(job.summary, "g", None, PENDING)
    assert job.summary["g"].queued == 0  # never below 0


def test_pending_to_running_moves_the_count() -> None:
    job = _summary()
    job_summary.count_alloc(job.summary, "g", None, PENDING)
    assert job_summary.count_alloc(job.summary, "g", PENDING, RUNNING)
    assert _counts(job.summary["g"]) == (1, 0, 1, 0, 0, 0)


def test_failed_and_complete_are_cumulative() -> None:
    job = _summary()
    job_summary.count_alloc(job.summary, "g", None, RUNNING)
    job_summary.count_alloc(job.summary, "g", RUNNING, FAILED)
    job_summary.count_alloc(job.summary, "g", FAILED, COMPLETE)  # failed is not decremented
    assert _counts(job.summary["g"])[2:5] == (0, 1, 1)


def test_lost_counts_now_and_a_same_status_report_changes_nothing() -> None:
    job = _summary()
    job_summary.count_alloc(job.summary, "g", None, RUNNING)
    assert not job_summary.count_alloc(job.summary, "g", RUNNING, RUNNING)
    job_summary.count_alloc(job.summary, "g", RUNNING, LOST)
    assert _counts(job.summary["g"])[2:] == (0, 0, 0, 1)


def test_requeue_is_count_less_starting_and_running_and_0_when_stopped() -> None:
    job = service_job(count=3)
    job.summary["g"].running = 1
    job_summary.requeue(job)
    assert job.summary["g"].queued == 2
    job.stop = True
    job_summary.requeue(job)
    assert job.summary["g"].queued == 0


def _alloc(aid: str, client: int) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(
        id=aid, namespace="default", job_id="web", task_group="g",
        desired_status=C.ALLOC_DESIRED_STATUS_RUN, client_status=client)  # type: ignore[arg-type]


def _followed_job(v: object, plan: PlanBuilder) -> job_pb2.Job:
    followed = job_status.follow(v, plan.build(lambda rev: rev), context().keys, None, 100)  # type: ignore[arg-type]
    (op,) = [op for op, e in zip(followed.ops, followed.events, strict=True)
             if e.kind == codec.JOBS]
    job: job_pb2.Job = codec.decode(codec.JOBS, op.value, 5, 9)  # type: ignore[union-attr]
    return job


def test_register_queues_the_count_and_a_placement_and_a_report_move_it() -> None:
    reg = job_plans.plan_register(view([]), context(), service_job(count=2))
    followed = job_status.follow(view([]), reg, context().keys, None, 100)
    job = codec.decode(codec.JOBS, followed.ops[0].value, 5, 5)  # type: ignore[union-attr]
    assert _counts(job.summary["g"]) == (2, 0, 0, 0, 0, 0)
    job.job_modify_index = 5
    plan = PlanBuilder(context().keys)
    plan.put(codec.ALLOCATIONS, "default", "a1", _alloc("a1", PENDING), 0)
    job = _followed_job(view([(codec.JOBS, job, 5, 5)]), plan)
    assert _counts(job.summary["g"]) == (1, 1, 0, 0, 0, 0)
    plan = PlanBuilder(context().keys)
    plan.put(codec.ALLOCATIONS, "default", "a1", _alloc("a1", RUNNING), 6)
    job = _followed_job(view([(codec.JOBS, job, 5, 7),
                              (codec.ALLOCATIONS, _alloc("a1", PENDING), 6, 6)]), plan)
    assert _counts(job.summary["g"]) == (1, 0, 1, 0, 0, 0)
    assert job.status == job_pb2.JOB_STATUS_RUNNING


def test_a_new_version_carries_the_summary_over() -> None:
    old = stored(service_job(count=2), 0)
    old.summary["g"].running, old.summary["g"].failed = 2, 1
    reg = job_plans.plan_register(view([(codec.JOBS, old, 5, 8)]), context(),
                                  service_job(count=3))
    followed = job_status.follow(view([(codec.JOBS, old, 5, 8)]), reg, context().keys, None, 100)
    job = codec.decode(codec.JOBS, followed.ops[0].value, 5, 9)  # type: ignore[union-attr]
    assert job.version == 1
    assert _counts(job.summary["g"]) == (1, 0, 2, 1, 0, 0)

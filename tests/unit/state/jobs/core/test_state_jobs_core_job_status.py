"""drover.state.jobs.core.job_status: Nomad's job status rule, and follow()
adding the job's new status to the plan that changes it."""

from __future__ import annotations

import pytest
from state_core_data import context, key, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2
from drover.coord.kv import Compare
from drover.errors import InvalidArgument
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder
from drover.state.jobs.core import job_status

PENDING, RUNNING, DEAD = (job_pb2.JOB_STATUS_PENDING, job_pb2.JOB_STATUS_RUNNING,
                          job_pb2.JOB_STATUS_DEAD)
RUN, STOP = allocation_pb2.ALLOC_DESIRED_STATUS_RUN, allocation_pb2.ALLOC_DESIRED_STATUS_STOP
C = allocation_pb2
E = evaluation_pb2


def _alloc(aid: str = "a1", desired: int = RUN,
           client: int = C.ALLOC_CLIENT_STATUS_PENDING) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=aid, namespace="default", job_id="web", task_group="g",
                                     desired_status=desired,  # type: ignore[arg-type]
                                     client_status=client)  # type: ignore[arg-type]


def _job(**kw: object) -> job_pb2.Job:
    return job_pb2.Job(id="web", **kw)  # type: ignore[arg-type]


def _eval(status: int = E.EVALUATION_STATUS_PENDING) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id="e1", namespace="default", job_id="web",
                                      status=status)  # type: ignore[arg-type]


def test_a_new_job_is_pending() -> None:
    """Nomad's getJobStatus: no allocation, no evaluation: pending."""
    assert job_status.status_of(_job(), [], []) == PENDING
    assert job_status.status_of(_job(), [], [_eval()]) == PENDING


@pytest.mark.parametrize("client", [C.ALLOC_CLIENT_STATUS_PENDING, C.ALLOC_CLIENT_STATUS_RUNNING])
def test_a_non_terminal_allocation_makes_it_running(client: int) -> None:
    assert job_status.status_of(_job(), [_alloc(client=client)], [_eval()]) == RUNNING


@pytest.mark.parametrize("desired,client", [
    (STOP, C.ALLOC_CLIENT_STATUS_RUNNING), (RUN, C.ALLOC_CLIENT_STATUS_COMPLETE),
    (RUN, C.ALLOC_CLIENT_STATUS_FAILED), (RUN, C.ALLOC_CLIENT_STATUS_LOST),
    (allocation_pb2.ALLOC_DESIRED_STATUS_EVICT, C.ALLOC_CLIENT_STATUS_RUNNING),
])
def test_terminal_is_server_or_client_terminal(desired: int, client: int) -> None:
    assert job_status.alloc_terminal(_alloc(desired=desired, client=client))


@pytest.mark.parametrize("status,terminal", [
    (E.EVALUATION_STATUS_PENDING, False), (E.EVALUATION_STATUS_BLOCKED, False),
    (E.EVALUATION_STATUS_COMPLETE, True), (E.EVALUATION_STATUS_FAILED, True),
    (E.EVALUATION_STATUS_CANCELED, True)])
def test_an_evaluation_is_terminal_unless_pending_or_blocked(status: int, terminal: bool) -> None:
    assert job_status.eval_terminal(_eval(status)) is terminal


def test_a_stopped_job_is_dead_once_its_allocations_and_evaluations_are_terminal() -> None:
    stopped = _job(stop=True)
    done = _eval(E.EVALUATION_STATUS_COMPLETE)
    assert job_status.status_of(stopped, [_alloc()], [done]) == RUNNING
    assert job_status.status_of(stopped, [_alloc(desired=STOP)], [_eval()]) == PENDING
    assert job_status.status_of(stopped, [_alloc(desired=STOP)], [done]) == DEAD
    assert job_status.status_of(stopped, [], [done]) == DEAD


def test_a_batch_job_is_dead_when_all_its_allocations_are_terminal() -> None:
    batch = _job(type=job_pb2.JOB_TYPE_BATCH)
    done = _alloc(client=C.ALLOC_CLIENT_STATUS_COMPLETE)
    assert job_status.status_of(batch, [done, _alloc("a2")], []) == RUNNING
    assert job_status.status_of(batch, [done], [_eval(E.EVALUATION_STATUS_COMPLETE)]) == DEAD


def test_a_failed_allocation_with_a_reschedule_pending_is_pending_else_dead() -> None:
    """The issue's two cases (Nomad's getJobStatus): a failed allocation and
    a pending (delayed reschedule) evaluation: pending, batch or service; the
    policy spent (every evaluation terminal): dead, not pending forever.
    Was: a deployment made it running, a batch job dead."""
    failed = _alloc(client=C.ALLOC_CLIENT_STATUS_FAILED)
    for job in (_job(), _job(type=job_pb2.JOB_TYPE_BATCH)):
        assert job_status.status_of(job, [failed], [_eval()]) == PENDING
        assert job_status.status_of(job, [failed], [_eval(E.EVALUATION_STATUS_COMPLETE)]) == DEAD


def test_a_system_job_is_running_unless_stopped() -> None:
    assert job_status.status_of(_job(type=job_pb2.JOB_TYPE_SYSTEM), [], []) == RUNNING
    assert job_status.status_of(_job(type=job_pb2.JOB_TYPE_SYSTEM, stop=True), [], []) == DEAD


def test_follow_adds_the_status_to_the_plan_that_places_the_first_allocation() -> None:
    job = stored(service_job(), 0)
    v = view([(codec.JOBS, job, 5, 5)])
    plan = PlanBuilder(context().keys)
    plan.put(codec.ALLOCATIONS, "default", "a1", _alloc(), 0)
    followed = job_status.follow(v, plan.build(lambda rev: rev), context().keys, None, 100)
    assert [e.kind for e in followed.events] == [codec.ALLOCATIONS, codec.JOBS]
    assert Compare(key(codec.JOBS, "default", "web"), "mod", 5) in followed.compares
    written = codec.decode(codec.JOBS, followed.ops[1].value, 5, 9)  # type: ignore[union-attr]
    # a status is no spec change: the spec index stays the job's (its revision 5)
    assert written.status == RUNNING and written.job_modify_index == 5


def test_follow_leaves_a_plan_that_changes_no_status_and_no_count_as_it_is() -> None:
    job = stored(service_job(), 0)
    job.status = RUNNING
    v = view([(codec.JOBS, job, 5, 5), (codec.ALLOCATIONS, _alloc("a0"), 6, 6)])
    plan = PlanBuilder(context().keys)
    plan.put(codec.ALLOCATIONS, "default", "a0", _alloc("a0", desired=RUN), 6)  # no move
    built = plan.build(lambda rev: rev)
    assert job_status.follow(v, built, context().keys, None, 100) is built


def test_follow_sets_the_status_on_the_job_the_plan_already_writes() -> None:
    job = stored(service_job(), 0)
    job.status = RUNNING
    job.stop = True
    v = view([(codec.JOBS, job, 5, 5), (codec.ALLOCATIONS, _alloc("a0"), 6, 6)])
    plan = PlanBuilder(context().keys)
    plan.put(codec.JOBS, "default", "web", job, 5)
    stop = _alloc("a0", desired=STOP)
    plan.put(codec.ALLOCATIONS, "default", "a0", stop, 6)
    followed = job_status.follow(v, plan.build(lambda rev: rev), context().keys, None, 100)
    assert len(followed.ops) == 2
    assert codec.decode(codec.JOBS, followed.ops[0].value, 5, 9).status == DEAD  # type: ignore[union-attr]


def test_follow_ignores_eval_only_plans_and_deletes() -> None:
    job = stored(service_job(), 0)
    v = view([(codec.JOBS, job, 5, 5), (codec.ALLOCATIONS, _alloc("a0"), 6, 6)])
    plan = PlanBuilder(context().keys)
    plan.delete(codec.ALLOCATIONS, "default", "a0", 6)
    built = plan.build(lambda rev: rev)
    assert job_status.follow(v, built, context().keys, None, 100) is built


def test_follow_refuses_a_write_with_no_room_for_its_jobs_summary() -> None:
    v = view([(codec.JOBS, stored(service_job(), 0), 5, 5)])
    plan = PlanBuilder(context().keys)
    plan.put(codec.ALLOCATIONS, "default", "a1", _alloc(), 0)
    with pytest.raises(InvalidArgument) as info:
        job_status.follow(v, plan.build(lambda rev: rev), context().keys, None, 1)
    assert info.value.metadata["max_objects"] == "1"


@pytest.mark.parametrize("eval_status,expected", [
    (E.EVALUATION_STATUS_PENDING, PENDING),
    (E.EVALUATION_STATUS_COMPLETE, DEAD),
])
def test_an_evaluation_write_decides_a_failed_services_status(eval_status: int,
                                                               expected: int) -> None:
    """Nomad's getJobStatus counts evaluations: the last one of a job whose
    allocations all failed completing makes it dead (was: pending forever)."""
    job = stored(service_job(), 0)
    job.status = PENDING
    failed = _alloc("a0", client=C.ALLOC_CLIENT_STATUS_FAILED)
    v = view([(codec.JOBS, job, 5, 5), (codec.ALLOCATIONS, failed, 6, 6)])
    plan = PlanBuilder(context().keys)
    plan.put(codec.EVALUATIONS, "default", "e1", _eval(eval_status), 0)
    followed = job_status.follow(v, plan.build(lambda rev: rev), context().keys, None, 100)
    written = [codec.decode(codec.JOBS, op.value, 5, 9)  # type: ignore[union-attr]
               for op, e in zip(followed.ops, followed.events, strict=True)
               if e.kind == codec.JOBS]
    assert [j.status for j in written] == ([] if expected == PENDING else [expected])


def test_an_evaluation_write_leaves_a_running_job_alone() -> None:
    job = stored(service_job(), 0)
    job.status = RUNNING
    v = view([(codec.JOBS, job, 5, 5), (codec.ALLOCATIONS, _alloc(), 6, 6)])
    plan = PlanBuilder(context().keys)
    plan.put(codec.EVALUATIONS, "default", "e1", _eval(E.EVALUATION_STATUS_COMPLETE), 0)
    built = plan.build(lambda rev: rev)
    assert job_status.follow(v, built, context().keys, None, 100) is built


def test_a_plan_read_before_a_status_write_still_holds_but_not_before_a_spec_change() -> None:
    job = stored(service_job(), 0)
    job.job_modify_index = 5  # the spec was written at 5; a status write moved it to 9
    v = view([(codec.JOBS, job, 5, 9)])
    assert job_status.spec_read(v, "default", "web", 5)
    assert job_status.spec_read(v, "default", "web", 9)
    assert not job_status.spec_read(v, "default", "web", 4)
    assert not job_status.spec_read(v, "default", "web", 0)
    assert not job_status.spec_read(view([]), "default", "web", 5)

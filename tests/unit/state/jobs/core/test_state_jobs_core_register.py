"""The job planners (:mod:`drover.state.jobs.core.register`) on views built from plain data:
the exact compares, ops, events and answers of RegisterJob and DeregisterJob,
and the refusals named by cause."""

from __future__ import annotations

import pytest
from state_core_data import context, key, service_job, stored, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
)
from drover.coord.kv import Compare, Put
from drover.errors import InvalidArgument, NotFound
from drover.state.core import codec
from drover.state.core.plan import Event
from drover.state.errors import JobModifyIndexMismatch, JobNotStopped, JobStopped, Replan
from drover.state.jobs.core import register as jobs

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING


def test_register_a_first_version_writes_job_version_deployment_and_eval() -> None:
    plan = jobs.plan_register(view([]), context(), service_job())
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 0),)
    assert [type(op) for op in plan.ops] == [Put, Put, Put, Put]
    assert plan.events == (
        Event(codec.JOBS, "default", "web", "put"),
        Event(codec.JOB_VERSIONS, "default", f"web/{0:020d}", "put"),
        Event(codec.DEPLOYMENTS, "default", "id-2", "put"),
        Event(codec.EVALUATIONS, "default", "id-1", "put"),
    )
    ev = codec.decode(codec.EVALUATIONS, plan.ops[3].value, 10, 10)  # type: ignore[union-attr]
    assert (ev.triggered_by, ev.deployment_id, ev.status) == ("job-register", "id-2", PENDING)
    dep = codec.decode(codec.DEPLOYMENTS, plan.ops[2].value, 10, 10)  # type: ignore[union-attr]
    assert dep.task_groups["g"].desired_canaries == 0  # a first version: no canaries
    resp = plan.respond(10)
    assert resp == state_pb2.RegisterJobResponse(job_modify_index=10, eval_id="id-1",
                                                 deployment_id="id-2", version=0, index=10)


def test_a_new_version_bumps_it_and_cancels_the_active_deployment() -> None:
    old = stored(service_job(), 3)
    running = deployment_pb2.Deployment(id="d-old", namespace="default", job_id="web",
                                        status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    done = deployment_pb2.Deployment(id="d-done", namespace="default", job_id="web",
                                     status=deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL)
    v = view([(codec.JOBS, old, 5, 8), (codec.DEPLOYMENTS, running, 6, 7),
              (codec.DEPLOYMENTS, done, 4, 4)])
    plan = jobs.plan_register(v, context(), service_job(count=5))
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 8),
                             Compare(key(codec.DEPLOYMENTS, "default", "d-old"), "mod", 7))
    assert [e.id for e in plan.events] == ["web", f"web/{4:020d}", "id-2", "d-old", "id-1"]
    cancelled = codec.decode(codec.DEPLOYMENTS, plan.ops[3].value, 6, 9)  # type: ignore[union-attr]
    assert cancelled.status == deployment_pb2.DEPLOYMENT_STATUS_CANCELLED
    assert plan.respond(9).version == 4


def test_an_unchanged_spec_writes_only_an_evaluation() -> None:
    old = stored(service_job(), 2)
    old.job_modify_index = 8
    plan = jobs.plan_register(view([(codec.JOBS, old, 5, 8)]), context(), service_job())
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 8),)
    assert plan.events == (Event(codec.EVALUATIONS, "default", "id-1", "put"),)
    resp = plan.respond(12)
    assert (resp.version, resp.job_modify_index, resp.deployment_id) == (2, 8, "")
    assert resp.warnings


def test_enforce_index_refuses_on_fresh_view_and_replans_on_stale() -> None:
    old = stored(service_job(), 1)
    data = [(codec.JOBS, old, 5, 8)]
    with pytest.raises(JobModifyIndexMismatch):
        jobs.plan_register(view(data), context(), service_job(), enforce_index=True,
                           job_modify_index=7)
    with pytest.raises(Replan):
        jobs.plan_register(view(data, fresh=False), context(), service_job(),
                           enforce_index=True, job_modify_index=7)
    plan = jobs.plan_register(view(data), context(), service_job(count=3), enforce_index=True,
                              job_modify_index=8)
    assert plan.writes


def test_deregister_stops_the_job_as_a_new_version() -> None:
    with pytest.raises(NotFound):
        jobs.plan_deregister(view([]), context(), "default", "web")
    plan = jobs.plan_deregister(view([(codec.JOBS, stored(service_job(), 1), 5, 8)]),
                                context(), "default", "web")
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 8),)
    assert [e.kind for e in plan.events] == [codec.EVALUATIONS, codec.JOBS, codec.JOB_VERSIONS]
    job = codec.decode(codec.JOBS, plan.ops[1].value, 5, 9)  # type: ignore[union-attr]
    assert job.stop and job.version == 2 and job.job_modify_index == 9


def test_a_service_job_without_an_update_block_rolls_with_nomads_defaults() -> None:
    plan = jobs.plan_register(view([]), context(), service_job(update=False))
    dep = codec.decode(codec.DEPLOYMENTS, plan.ops[2].value, 10, 10)  # type: ignore[union-attr]
    assert dep.task_groups["g"].progress_deadline.seconds == 600
    stored_job = codec.decode(codec.JOBS, plan.ops[0].value, 10, 10)  # type: ignore[union-attr]
    assert stored_job.task_groups[0].update.max_parallel == 1
    assert list(stored_job.datacenters) == ["dc1"]


def test_max_parallel_0_is_no_update_strategy_and_no_deployment() -> None:
    job = service_job()
    job.task_groups[0].update.max_parallel = 0
    plan = jobs.plan_register(view([]), context(), job)
    assert [e.kind for e in plan.events] == [codec.JOBS, codec.JOB_VERSIONS, codec.EVALUATIONS]


def test_stop_cancels_the_active_deployment_as_nomad_says() -> None:
    running = deployment_pb2.Deployment(id="d1", namespace="default", job_id="web",
                                        status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    v = view([(codec.JOBS, stored(service_job(), 1), 5, 8), (codec.DEPLOYMENTS, running, 6, 7)])
    plan = jobs.plan_deregister(v, context(), "default", "web")
    assert Compare(key(codec.DEPLOYMENTS, "default", "d1"), "mod", 7) in plan.compares
    i = [e.kind for e in plan.events].index(codec.DEPLOYMENTS)
    d = codec.decode(codec.DEPLOYMENTS, plan.ops[i].value, 6, 9)  # type: ignore[union-attr]
    assert d.status == deployment_pb2.DEPLOYMENT_STATUS_CANCELLED
    assert d.status_description == "Cancelled because job is stopped"


def test_start_registers_the_last_version_before_the_stop_as_a_new_version() -> None:
    v1 = stored(service_job(count=4), 1)
    stopped = stored(service_job(count=4), 2)
    stopped.stop = True
    v = view([(codec.JOBS, stopped, 5, 8), (codec.JOB_VERSIONS, v1, 6, 6),
              (codec.JOB_VERSIONS, stopped, 8, 8)])
    plan = jobs.plan_start(v, context(), "default", "web")
    job = codec.decode(codec.JOBS, plan.ops[0].value, 5, 9)  # type: ignore[union-attr]
    assert (job.stop, job.version, job.task_groups[0].count) == (False, 3, 4)
    resp = plan.respond(9)
    assert (resp.version, resp.from_version, resp.deployment_id) == (3, 1, "id-2")
    dep = codec.decode(codec.DEPLOYMENTS, plan.ops[2].value, 9, 9)  # type: ignore[union-attr]
    assert dep.task_groups["g"].desired_canaries == 0


def test_start_refuses_a_job_that_is_not_stopped_or_does_not_exist() -> None:
    with pytest.raises(NotFound):
        jobs.plan_start(view([]), context(), "default", "web")
    with pytest.raises(JobNotStopped) as info:
        jobs.plan_start(view([(codec.JOBS, stored(service_job(), 1), 5, 8)]), context(),
                        "default", "web")
    assert info.value.reason == "JOB_NOT_STOPPED" and "not stopped" in str(info.value)


@pytest.mark.parametrize("stored_job,expected,words,have", [
    (True, 0, "Enforcing job modify index 0: job already exists", "8"),
    (True, 7, "Enforcing job modify index 7: job exists with conflicting job modify index: 8",
     "8"),
    (False, 7, "Enforcing job modify index 7: job does not exist", "0"),
])
def test_check_index_refusals_say_what_nomad_says_and_carry_the_current_index(
    stored_job: bool, expected: int, words: str, have: str,
) -> None:
    data = [(codec.JOBS, stored(service_job(), 1), 5, 8)] if stored_job else []
    with pytest.raises(JobModifyIndexMismatch) as info:
        jobs.plan_register(view(data), context(), service_job(), enforce_index=True,
                           job_modify_index=expected)
    assert str(info.value).startswith(words)
    assert f"--check-index {have}" in str(info.value)
    assert info.value.metadata["job_modify_index"] == have
    assert info.value.reason == "JOB_MODIFY_INDEX_MISMATCH"


def test_check_index_0_registers_a_new_job() -> None:
    plan = jobs.plan_register(view([]), context(), service_job(), enforce_index=True,
                              job_modify_index=0)
    assert plan.writes


def test_scale_registers_the_new_count_with_a_job_scaling_evaluation() -> None:
    v = view([(codec.JOBS, stored(service_job(count=2), 1), 5, 8)])
    plan = jobs.plan_scale(v, context(), "default", "web", "g", 5)
    job = codec.decode(codec.JOBS, plan.ops[0].value, 5, 9)  # type: ignore[union-attr]
    assert (job.version, job.task_groups[0].count) == (2, 5)
    ev = codec.decode(codec.EVALUATIONS, plan.ops[-1].value, 9, 9)  # type: ignore[union-attr]
    assert ev.triggered_by == "job-scaling"
    assert plan.respond(9).previous_count == 2


def test_scale_refusals() -> None:
    v = view([(codec.JOBS, stored(service_job(count=2), 1), 5, 8)])
    with pytest.raises(InvalidArgument, match="does not exist in job"):
        jobs.plan_scale(v, context(), "default", "web", "nope", 1)
    with pytest.raises(JobModifyIndexMismatch):
        jobs.plan_scale(v, context(), "default", "web", "g", 1, enforce_index=3)
    with pytest.raises(NotFound):
        jobs.plan_scale(view([]), context(), "default", "web", "g", 1)
    system = stored(service_job(), 1)
    system.type = job_pb2.JOB_TYPE_SYSTEM
    with pytest.raises(InvalidArgument, match="between 0 and 1"):
        jobs.plan_scale(view([(codec.JOBS, system, 5, 8)]), context(), "default", "web", "g", 2)
    stopped = stored(service_job(), 1)
    stopped.stop = True
    with pytest.raises(JobStopped):
        jobs.plan_scale(view([(codec.JOBS, stopped, 5, 8)]), context(), "default", "web", "g", 2)


def test_a_version_record_keeps_no_summary_and_no_pending_purge() -> None:
    live = stored(service_job(), 1)
    live.summary["g"].running = 2
    live.purge_requested = True
    plan = jobs.plan_deregister(view([(codec.JOBS, live, 5, 8)]), context(), "default", "web")
    i = [e.kind for e in plan.events].index(codec.JOB_VERSIONS)
    record = codec.decode(codec.JOB_VERSIONS, plan.ops[i].value, 9, 9)  # type: ignore[union-attr]
    assert not record.summary and not record.purge_requested and record.stop
    job = codec.decode(codec.JOBS, plan.ops[[e.kind for e in plan.events].index(codec.JOBS)]
                       .value, 5, 9)  # type: ignore[union-attr]
    assert job.summary["g"].running == 2 and job.purge_requested

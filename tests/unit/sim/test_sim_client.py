"""The simulated client's reports: Nomad's health rules, steerable outcomes."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.sim.client import (
    COMPLETE,
    FAILED,
    RUNNING,
    Behaviour,
    Report,
    Track,
    behaviour_of,
    step,
    wake_at,
)


def _job(outcome: str = "", batch: bool = False) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="g", count=1, update=job_pb2.UpdateStrategy(
        min_healthy_time=Duration(seconds=2), healthy_deadline=Duration(seconds=5)))
    if outcome:
        tg.meta["sim.outcome"] = outcome
    return job_pb2.Job(id="j", task_groups=[tg],
                       type=job_pb2.JOB_TYPE_BATCH if batch else job_pb2.JOB_TYPE_SERVICE)


def _run(b: Behaviour, until: float, deployment: bool = True) -> list[tuple[float, Report]]:
    t = Track(0.0, deployment)
    out: list[tuple[float, Report]] = []
    for i in range(int(until * 10) + 1):
        now = i / 10
        r = step(t, b, now)
        if r is not None:
            out.append((now, r))
    return out


def test_healthy_after_min_healthy_time() -> None:
    b = behaviour_of(_job(), "g")
    assert (b.min_healthy, b.healthy_deadline) == (2.0, 5.0)
    reports = _run(b, 10)
    assert [(t, r.client_status, r.healthy) for t, r in reports] == [
        (0.2, RUNNING, None), (2.2, 0, True)]


def test_never_healthy_is_unhealthy_at_the_deadline() -> None:
    reports = _run(behaviour_of(_job("never_healthy"), "g"), 10)
    assert [(t, r.healthy) for t, r in reports] == [(0.2, None), (5.2, False)]


def test_fail_and_crash() -> None:
    [(_, fail)] = _run(behaviour_of(_job("fail"), "g"), 10)
    assert fail.client_status == FAILED and fail.healthy is False
    crash = _run(behaviour_of(_job("crash"), "g"), 10)
    assert [(r.client_status, r.healthy) for _, r in crash] == [
        (RUNNING, None), (0, True), (FAILED, None)]


def test_batch_completes_and_no_health_outside_deployments() -> None:
    b = behaviour_of(_job(batch=True), "g")
    assert [r.client_status for _, r in _run(b, 5, deployment=False)] == [RUNNING, COMPLETE]
    assert [r.healthy for _, r in _run(behaviour_of(_job(), "g"), 10, deployment=False)] == [None]


def test_stop_completes_and_in_place_update_reports_health_again() -> None:
    t = Track(0.0, True)
    b = behaviour_of(_job(), "g")
    for now in (0.3, 2.5):
        step(t, b, now)
    assert t.healthy is True
    moved = allocation_pb2.Allocation(deployment_id="d2",
                                      desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    t.observe(moved, 3.0)
    assert step(t, b, 4.0) is None and step(t, b, 5.1).healthy is True  # type: ignore[union-attr]
    moved.desired_status = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
    t.observe(moved, 6.0)
    assert step(t, b, 6.0).client_status == COMPLETE  # type: ignore[union-attr]


def _run_by_wakes(b: Behaviour, until: float, deployment: bool) -> list[tuple[float, Report]]:
    """As :func:`_run`, but a tick steps the track only once its wake_at came."""
    t = Track(0.0, deployment)
    out: list[tuple[float, Report]] = []
    at = wake_at(t, b)
    for i in range(int(until * 10) + 1):
        now = i / 10
        if at is None or now < at:
            continue
        r = step(t, b, now)
        if r is not None:
            out.append((now, r))
        at = wake_at(t, b)
    return out


def test_a_track_stepped_only_at_its_wake_reports_what_every_tick_would() -> None:
    for outcome in ("", "fail", "crash", "never_healthy"):
        for batch in (False, True):
            for deployment in (False, True):
                b = behaviour_of(_job(outcome, batch), "g")
                assert _run_by_wakes(b, 400, deployment) == _run(b, 400, deployment), (
                    outcome, batch, deployment)


def test_a_healthy_running_allocation_wakes_only_when_observed_again() -> None:
    t = Track(0.0, True)
    b = behaviour_of(_job(), "g")
    assert wake_at(t, b) == 0.2  # to start
    step(t, b, 0.2)
    assert wake_at(t, b) == 2.2  # health after min_healthy_time
    step(t, b, 2.2)
    assert wake_at(t, b) is None  # nothing more to say on its own
    t.observe(allocation_pb2.Allocation(desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_STOP),
              9.0)
    assert wake_at(t, b) == float("-inf")  # the stop is reported at once

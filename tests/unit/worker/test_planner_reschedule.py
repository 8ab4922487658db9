"""The planner's failed allocations (drover.worker.failed, planner hooks), on
scenarios taken from Nomad's reconciler tests (TestReconciler_RescheduleNow_*,
TestReconciler_RescheduleLater_*, TestReconciler_Service_ClientStatusComplete,
TestReconciler_LostNode, TestReconciler_StopOldCanaries / failed deployments),
on a virtual clock."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2, node_pb2
from drover.worker import reschedule
from drover.worker.plan import Plan, Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import Vec, fill_defaults

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
LOST = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
NOW = 1_800_000_000.0


def job(kind: job_pb2.JobType = job_pb2.JOB_TYPE_SERVICE, count: int = 3,
        block: job_pb2.ReschedulePolicy | None = None, canary: int = 0,
        version: int = 0) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="g", count=count, tasks=[job_pb2.Task(name="t", driver="sim")])
    if canary:
        tg.update.CopyFrom(job_pb2.UpdateStrategy(max_parallel=1, canary=canary))
    if block is not None:
        tg.reschedule.CopyFrom(block)
    j = job_pb2.Job(id="web", namespace="default", type=kind, priority=50, version=version,
                    task_groups=[tg])
    fill_defaults(j)
    return j


def alloc(j: job_pb2.Job, i: int, status: allocation_pb2.AllocClientStatus = RUNNING,
          failed_at: float = 0.0, **kw: object) -> allocation_pb2.Allocation:
    a = allocation_pb2.Allocation(
        id=f"a{i}", namespace="default", job_id="web", job_version=j.version, task_group="g",
        name=f"web.g[{i}]", node_id="n0", desired_status=RUN, client_status=status,
        resources=job_pb2.Resources(cpu=100, memory_mb=300), **kw)  # type: ignore[arg-type]
    if failed_at:
        a.finished_at.CopyFrom(reschedule.timestamp(failed_at))
    return a


def plan_for(j: job_pb2.Job, allocs: list[allocation_pb2.Allocation], now: float = NOW,
             eval_id: str = "e1", dep: deployment_pb2.Deployment | None = None) -> Plan:
    ns = [node_pb2.Node(id=f"n{i}", status=node_pb2.NODE_STATUS_READY,
                        resources=job_pb2.Resources(cpu=4000, memory_mb=8000)) for i in range(3)]
    used: dict[str, Vec] = {}
    snap = Snapshot("default", "web", j, {j.version: j}, dep, allocs, ns, used,
                    eval_id=eval_id, now=now)
    return compute_plan(snap, new_id=ids())


def ids() -> Callable[[], str]:
    c = itertools.count()
    return lambda: f"new-{next(c)}"


def _secs(s: float) -> Duration:
    d = Duration()
    d.FromNanoseconds(int(s * 1e9))
    return d


def test_reschedule_now_when_due() -> None:
    j = job()
    allocs = [alloc(j, 0), alloc(j, 1), alloc(j, 2, FAILED, failed_at=NOW - 31)]
    plan = plan_for(j, allocs)
    (new,) = plan.placements
    (old,) = plan.updates
    assert old.id == "a2" and old.desired_status == STOP
    assert old.desired_description == "alloc was rescheduled because it failed"
    assert old.next_allocation == new.id and new.previous_allocation == "a2"
    assert new.name == "web.g[2]"  # the replacement keeps the name
    (ev,) = new.reschedule_tracker.events
    assert (ev.prev_alloc_id, ev.prev_node_id, ev.delay.seconds) == ("a2", "n0", 30)
    assert ev.reschedule_time.seconds == int(NOW)
    assert not plan.evaluations


def test_reschedule_now_within_one_second_of_due() -> None:
    j = job(count=1)
    plan = plan_for(j, [alloc(j, 0, FAILED, failed_at=NOW - 29.5)])
    assert len(plan.placements) == 1


def test_own_followup_eval_reschedules_now_even_if_early() -> None:
    j = job(count=1)
    a = alloc(j, 0, FAILED, failed_at=NOW - 20, followup_eval_id="e1")
    assert len(plan_for(j, [a], eval_id="e1").placements) == 1


def test_reschedule_later_creates_a_followup_eval() -> None:
    j = job(count=2)
    allocs = [alloc(j, 0), alloc(j, 1, FAILED, failed_at=NOW - 10)]
    plan = plan_for(j, allocs)
    assert not plan.placements  # the failed one holds its slot until then
    (ev,) = plan.evaluations
    assert ev.triggered_by == "alloc-failure" and ev.previous_eval == "e1"
    assert ev.status_description == "created for delayed rescheduling"
    assert abs(reschedule._ts(ev.wait_until) - (NOW + 20)) < 1e-6
    (marked,) = plan.updates
    assert marked.id == "a1" and marked.followup_eval_id == ev.id and marked.desired_status == RUN


def test_reschedule_later_batches_within_5s() -> None:
    j = job(count=3)
    allocs = [alloc(j, 0, FAILED, failed_at=NOW - 10), alloc(j, 1, FAILED, failed_at=NOW - 7),
              alloc(j, 2, FAILED, failed_at=NOW)]
    plan = plan_for(j, allocs)
    assert [round(reschedule._ts(e.wait_until) - NOW) for e in plan.evaluations] == [20, 30]
    follow = {a.id: a.followup_eval_id for a in plan.updates}
    assert follow["a0"] == follow["a1"] != follow["a2"]


def test_pending_followup_is_left_alone() -> None:
    j = job(count=1)
    plan = plan_for(j, [alloc(j, 0, FAILED, failed_at=NOW - 10, followup_eval_id="other")])
    assert plan.empty


def test_exponential_delay_doubles_per_reschedule() -> None:
    j = job(count=1)
    tracker = reschedule.tracker_proto([reschedule.Event(NOW - 100, "x", "n1", 30.0)])
    a = alloc(j, 0, FAILED, failed_at=NOW - 50, reschedule_tracker=tracker)
    plan = plan_for(j, [a])
    assert not plan.placements
    assert round(reschedule._ts(plan.evaluations[0].wait_until)) == round(NOW + 10)  # 30 * 2
    plan = plan_for(j, [a], now=NOW + 10)
    (new,) = plan.placements
    assert [e.delay.seconds for e in new.reschedule_tracker.events] == [30, 60]


def test_spent_policy_stops_replacing() -> None:
    block = job_pb2.ReschedulePolicy(attempts=1, interval=_secs(3600), delay=_secs(5),
                                     delay_function="constant", unlimited=False)
    j = job(block=block)
    tracker = reschedule.tracker_proto([reschedule.Event(NOW - 100, "x", "n1", 5.0)])
    a = alloc(j, 0, FAILED, failed_at=NOW - 60, reschedule_tracker=tracker)
    assert plan_for(j, [a, alloc(j, 1), alloc(j, 2)]).empty


def test_disabled_policy_never_replaces() -> None:
    j = job(count=1, block=job_pb2.ReschedulePolicy(attempts=0, unlimited=False))
    assert plan_for(j, [alloc(j, 0, FAILED, failed_at=NOW - 3600)]).empty


def test_batch_failed_gets_its_one_attempt() -> None:
    j = job(job_pb2.JOB_TYPE_BATCH, count=1)
    first = alloc(j, 0, FAILED, failed_at=NOW - 6)
    plan = plan_for(j, [first])
    (new,) = plan.placements
    assert new.previous_allocation == "a0"
    again = allocation_pb2.Allocation()
    again.CopyFrom(new)
    again.client_status = FAILED
    again.finished_at.CopyFrom(reschedule.timestamp(NOW + 10))
    stopped = plan.updates[0]
    assert plan_for(j, [stopped, again], now=NOW + 60).empty  # 1 attempt in 24h: spent


def test_batch_completed_is_not_replaced() -> None:
    j = job(job_pb2.JOB_TYPE_BATCH, count=2)
    assert plan_for(j, [alloc(j, 0, COMPLETE), alloc(j, 1, COMPLETE)]).empty


def test_service_completed_is_replaced_at_once() -> None:
    j = job(count=1)
    plan = plan_for(j, [alloc(j, 0, COMPLETE)])
    assert len(plan.placements) == 1 and not plan.evaluations


def test_lost_is_replaced_at_once_whatever_the_policy() -> None:
    j = job(block=job_pb2.ReschedulePolicy(attempts=0, unlimited=False))
    plan = plan_for(j, [alloc(j, 0, LOST), alloc(j, 1), alloc(j, 2)])
    assert len(plan.placements) == 1 and plan.updates[0].desired_status == STOP


def test_failed_in_its_failed_deployment_is_not_rescheduled() -> None:
    j = job()
    dep = deployment_pb2.Deployment(id="d1", job_id="web", job_version=0,
                                    status=deployment_pb2.DEPLOYMENT_STATUS_FAILED)
    a = alloc(j, 0, FAILED, failed_at=NOW - 60, deployment_id="d1")
    assert not plan_for(j, [a, alloc(j, 1), alloc(j, 2)], dep=dep).placements


def test_failed_in_a_running_deployment_is_rescheduled() -> None:
    j = job()
    dep = deployment_pb2.Deployment(id="d1", job_id="web", job_version=0,
                                    status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    dep.task_groups["g"].desired_total = 3
    a = alloc(j, 0, FAILED, failed_at=NOW - 60, deployment_id="d1")
    (new,) = plan_for(j, [a, alloc(j, 1), alloc(j, 2)], dep=dep).placements
    assert new.deployment_id == "d1" and new.previous_allocation == "a0"


def _canary_case(status: deployment_pb2.DeploymentStatus, promoted: bool = False) -> Plan:
    v0, v1 = job(version=0), job(version=1, canary=1)
    v1.task_groups[0].tasks[0].config["image"] = "v2"
    dep = deployment_pb2.Deployment(id="d1", job_id="web", job_version=1, status=status)
    dep.task_groups["g"].desired_canaries = 1
    dep.task_groups["g"].promoted = promoted
    old = [alloc(v0, i) for i in range(3)]
    canary = alloc(v1, 3, deployment_id="d1")
    canary.id = "canary"
    canary.deployment_status.canary = True
    snap = Snapshot("default", "web", v1, {0: v0, 1: v1}, dep, [*old, canary],
                    [node_pb2.Node(id="n0", status=node_pb2.NODE_STATUS_READY,
                                   resources=job_pb2.Resources(cpu=4000, memory_mb=8000))],
                    {}, eval_id="e1", now=NOW)
    return compute_plan(snap, new_id=ids())


def test_failed_deployment_stops_its_unpromoted_canaries() -> None:
    plan = _canary_case(deployment_pb2.DEPLOYMENT_STATUS_FAILED)
    stopped = [a for a in plan.updates if a.desired_status == STOP]
    assert [a.id for a in stopped] == ["canary"]
    assert stopped[0].desired_description == "alloc not needed due to job update"
    assert not plan.placements


def test_cancelled_deployment_stops_its_unpromoted_canaries() -> None:
    plan = _canary_case(deployment_pb2.DEPLOYMENT_STATUS_CANCELLED)
    assert [a.id for a in plan.updates if a.desired_status == STOP] == ["canary"]


def test_running_deployment_keeps_its_canaries() -> None:
    plan = _canary_case(deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    assert "canary" not in {a.id for a in plan.updates if a.desired_status == STOP}

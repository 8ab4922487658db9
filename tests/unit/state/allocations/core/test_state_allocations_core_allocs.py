"""The allocation and scheduler-config planners (:mod:`drover.state.allocations.core.allocs`)
on views built from plain data."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from state_core_data import NOW, context, key, service_job, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
)
from drover.coord.kv import Compare
from drover.errors import NotFound
from drover.state.allocations.core import allocs
from drover.state.core import codec


def test_update_allocations_never_create() -> None:
    update = state_pb2.AllocationUpdate(
        id="a1", client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)
    with pytest.raises(NotFound, match="allocation 'a1' not found"):
        allocs.plan_update_allocs(view([]), context(), [update])
    a = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j")
    plan = allocs.plan_update_allocs(view([(codec.ALLOCATIONS, a, 3, 4)]), context(), [update])
    assert plan.compares == (Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 4),)


def test_upsert_allocations_rewrites_and_compares_each_nodes_usage_record() -> None:
    a = allocation_pb2.Allocation(id="a1", namespace="default", job_id="web", node_id="n1",
                                  desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    a.resources.cpu = 100
    v = view([(codec.JOBS, service_job(), 1, 1),
              (codec.NODE_USAGE, node_pb2.NodeUsage(node_id="n1"), 5, 6)])
    plan = allocs.plan_upsert_allocs(v, context(), [a])
    usage_key = key(codec.NODE_USAGE, codec.GLOBAL_NS, "n1")
    assert Compare(usage_key, "mod", 6) in plan.compares
    assert usage_key in [op.key for op in plan.ops]


# -- a failure report creates its alloc-failure evaluation -----------------------

FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED


def _written(plan: Any, kind: str) -> list[Any]:
    return [codec.decode(kind, op.value, 0, 0) for op, ev in zip(plan.ops, plan.events,
                                                                 strict=True) if ev.kind == kind]


def _failing(job: job_pb2.Job, *ids: str, **kw: Any) -> tuple[Any, list[Any]]:
    objs: list[tuple[str, Any, int, int]] = [(codec.JOBS, job, 2, 2)]
    for i, aid in enumerate(ids):
        objs.append((codec.ALLOCATIONS, allocation_pb2.Allocation(
            id=aid, namespace="default", job_id=job.id, job_version=job.version,
            task_group="g", node_id="n1", desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
            client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, **kw), 3 + i, 3 + i))
    updates = [state_pb2.AllocationUpdate(id=aid, client_status=FAILED) for aid in ids]
    return view(objs), updates


def test_failure_creates_an_alloc_failure_eval_due_at_the_next_reschedule() -> None:
    v, updates = _failing(service_job(), "a1")
    plan = allocs.plan_update_allocs(v, context(), updates)
    (ev,) = _written(plan, codec.EVALUATIONS)
    (a,) = _written(plan, codec.ALLOCATIONS)
    assert ev.triggered_by == "alloc-failure" and ev.job_id == "web" and ev.type == "service"
    assert ev.status == evaluation_pb2.EVALUATION_STATUS_PENDING
    assert ev.wait_until.seconds == NOW.seconds + 30  # the service default's first delay
    assert a.followup_eval_id == ev.id and a.finished_at == NOW


def test_failures_of_one_job_share_one_eval() -> None:
    v, updates = _failing(service_job(), "a1", "a2")
    plan = allocs.plan_update_allocs(v, context(), updates)
    (ev,) = _written(plan, codec.EVALUATIONS)
    assert {a.followup_eval_id for a in _written(plan, codec.ALLOCATIONS)} == {ev.id}


def test_spent_policy_creates_no_eval() -> None:
    job = service_job()
    job.type = job_pb2.JOB_TYPE_BATCH
    tracker = allocation_pb2.RescheduleTracker(events=[allocation_pb2.RescheduleEvent(
        reschedule_time=Timestamp(seconds=NOW.seconds - 60))])
    v, updates = _failing(job, "a1", reschedule_tracker=tracker)  # batch: 1 attempt in 24h
    plan = allocs.plan_update_allocs(v, context(), updates)
    assert _written(plan, codec.EVALUATIONS) == []
    assert _written(plan, codec.ALLOCATIONS)[0].followup_eval_id == ""


def test_disabled_policy_creates_no_eval() -> None:
    job = service_job()
    job.task_groups[0].reschedule.unlimited = False
    v, updates = _failing(job, "a1")
    assert _written(allocs.plan_update_allocs(v, context(), updates), codec.EVALUATIONS) == []


def test_a_repeated_failure_report_creates_no_second_eval() -> None:
    v, updates = _failing(service_job(), "a1", client_description="x")
    first = _written(allocs.plan_update_allocs(v, context(), updates), codec.ALLOCATIONS)[0]
    again = view([(codec.JOBS, service_job(), 2, 2), (codec.ALLOCATIONS, first, 3, 5)])
    assert _written(allocs.plan_update_allocs(again, context(), updates),
                    codec.EVALUATIONS) == []


def test_running_and_complete_reports_create_no_eval() -> None:
    v, _ = _failing(service_job(), "a1")
    for status in (allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
                   allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE):
        plan = allocs.plan_update_allocs(v, context(), [state_pb2.AllocationUpdate(
            id="a1", client_status=status)])
        assert _written(plan, codec.EVALUATIONS) == []


def test_upsert_allocations_same_create_again_writes_nothing() -> None:
    """An allocation stored exactly as upserted again (a retried create,
    times aside) is compared, not put; a changed one is put."""
    job = job_pb2.Job(id="j", namespace="default")
    stored = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j", node_id="n")
    stored.create_time.seconds = 5
    v = view([(codec.JOBS, job, 2, 2), (codec.ALLOCATIONS, stored, 3, 4)])
    again = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j", node_id="n")
    plan = allocs.plan_upsert_allocs(v, context(), [again])
    assert not plan.writes
    assert Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 4) in plan.compares
    moved = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j", node_id="m")
    plan = allocs.plan_upsert_allocs(v, context(), [moved])
    assert plan.writes and plan.events[0].id == "a1"

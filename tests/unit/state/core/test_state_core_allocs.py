"""The allocation and scheduler-config planners (:mod:`drover.state.core.allocs`)
on views built from plain data."""

from __future__ import annotations

import pytest
from core_data import context, key, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    job_pb2,
    scheduler_pb2,
)
from drover.coord.kv import Compare
from drover.errors import NotFound
from drover.state.core import allocs, codec


def test_scheduler_config_cas_writes_nothing_when_it_does_not_hold() -> None:
    cfg = scheduler_pb2.SchedulerConfig(pause_eval_broker=True)
    v = view([(codec.SCHEDULER_CONFIG, scheduler_pb2.SchedulerConfig(), 2, 3)])
    assert not allocs.plan_scheduler_config(v, context(), cfg, 2).writes
    assert allocs.plan_scheduler_config(v, context(), cfg, 2).respond(3).updated is False
    plan = allocs.plan_scheduler_config(v, context(), cfg, 3)
    assert plan.compares[0].value == 3 and plan.respond(4).updated


def test_update_allocations_never_create() -> None:
    update = state_pb2.AllocationUpdate(
        id="a1", client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)
    with pytest.raises(NotFound, match="allocation 'a1' not found"):
        allocs.plan_update_allocs(view([]), context(), [update])
    a = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j")
    plan = allocs.plan_update_allocs(view([(codec.ALLOCATIONS, a, 3, 4)]), context(), [update])
    assert plan.compares == (Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 4),)


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

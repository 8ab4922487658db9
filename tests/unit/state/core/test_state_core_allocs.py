"""The allocation and scheduler-config planners (:mod:`drover.state.core.allocs`)
on views built from plain data."""

from __future__ import annotations

import pytest
from core_data import context, key, service_job, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2, scheduler_pb2
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

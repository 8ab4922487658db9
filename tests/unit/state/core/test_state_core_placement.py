"""SubmitPlan's planner (:mod:`drover.state.core.placement`) on views built from
plain data: stale when the job moved, final on a conflict."""

from __future__ import annotations

import pytest
from core_data import NOW, context, key, ready_node, service_job, stored, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
)
from drover.coord.kv import Compare
from drover.state.core import codec
from drover.state.core.placement import plan_submit
from drover.state.core.rules import PlanStale


def test_submit_plan_is_stale_when_the_job_moved_and_final_on_conflict() -> None:
    job = stored(service_job(), 1)
    v = view([(codec.JOBS, job, 1, 4), (codec.NODES, ready_node(), 2, 3)])
    a = allocation_pb2.Allocation(id="p1", namespace="default", job_id="web", node_id="n1",
                                  desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    a.resources.cpu, a.resources.memory_mb = 100, 100
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=3,
                                      node_indexes={"n1": 3})
    with pytest.raises(PlanStale) as err:
        plan_submit(v, context(), req, "default", [a], [], [])
    assert err.value.metadata["what"] == "job"
    req.job_index = 4
    plan = plan_submit(v, context(), req, "default", [a], [], [])
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 4),
                             Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 3),
                             Compare(key(codec.ALLOCATIONS, "default", "p1"), "mod", 0))
    assert not plan.retry and isinstance(plan.conflict_error(), PlanStale)
    assert a.create_time == NOW

"""plan_size: a plan's writes from etcd's --max-txn-ops, and a refusal's cap."""

from __future__ import annotations

from drover.errors import InvalidArgument, NotFound
from drover.worker.plan_size import DEFAULT_PLAN_OBJECTS, plan_objects, refused_cap


def test_a_plan_leaves_room_for_the_marker_and_the_jobs_status_and_summary() -> None:
    assert DEFAULT_PLAN_OBJECTS == plan_objects(128) == 125
    assert plan_objects(1024) == 1021


def test_a_refusal_for_size_names_the_plan_size_to_use() -> None:
    refusal = InvalidArgument("plan writes 300 objects", metadata={"field": "plan",
                                                                   "max_objects": "127"})
    assert refused_cap(refusal) == 125


def test_other_refusals_name_no_size() -> None:
    assert refused_cap(InvalidArgument("bad job_id", metadata={"field": "job_id"})) is None
    assert refused_cap(NotFound("no job", metadata={"max_objects": "127"})) is None
    assert refused_cap(InvalidArgument("x", metadata={"max_objects": "lots"})) is None

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


def test_a_refusal_for_a_collections_size_names_the_entries_to_split_to() -> None:
    from drover.worker.plan_size import DEFAULT_PLAN_ENTRIES, entries_cap, plan_cap

    refusal = InvalidArgument("node_indexes: has 2000 entries; at most 1024",
                              metadata={"field": "node_indexes", "max_entries": "1024"})
    assert entries_cap(refusal) == 1024 == DEFAULT_PLAN_ENTRIES
    assert entries_cap(InvalidArgument("x", metadata={"field": "plan"})) is None
    assert entries_cap(NotFound("x", metadata={"max_entries": "5"})) is None
    # a plan's collections are each at most its writes: the smaller cap wins
    assert plan_cap(plan_objects(4096), 1024) == 1024 and plan_cap(125, 1024) == 125


def test_the_jobs_allocation_set_travels_as_count_and_newest_create_index() -> None:
    from drover.api.types.v1 import allocation_pb2
    from drover.worker.plan_size import job_alloc_set

    allocs = [allocation_pb2.Allocation(id=f"a{i}", create_index=c)
              for i, c in enumerate([5, 9, 7])]
    got = job_alloc_set(allocs)
    assert (got.count, got.max_create_index) == (3, 9)
    assert (job_alloc_set([]).count, job_alloc_set([]).max_create_index) == (0, 0)

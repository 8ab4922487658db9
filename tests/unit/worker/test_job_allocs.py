"""job_allocs: a job's allocations kept for delta reads, trusted only when
the merge matches the answer's whole-set numbers."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2
from drover.worker.job_allocs import JobAllocCache


def _a(aid: str, create: int, mod: int) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=aid, create_index=create, modify_index=mod)


def _delta(count: int, newest: int, *changed: allocation_pb2.Allocation,
           complete: bool = True) -> state_pb2.JobSnapshot:
    return state_pb2.JobSnapshot(allocations=changed, allocations_complete=complete,
                                 alloc_set=state_pb2.JobAllocSet(count=count,
                                                                 max_create_index=newest))


def test_a_delta_is_merged_over_what_was_kept_in_create_order() -> None:
    cache = JobAllocCache()
    assert cache.since("default", "web") == 0
    cache.keep("default", "web", 10, [_a("a1", 3, 3), _a("a2", 5, 5)])
    assert cache.since("default", "web") == 10
    merged = cache.merge("default", "web", _delta(3, 12, _a("a3", 12, 12), _a("a1", 3, 11)))
    assert merged is not None
    assert [(a.id, a.modify_index) for a in merged] == [("a1", 11), ("a2", 5), ("a3", 12)]


def test_a_merge_that_does_not_match_the_whole_set_is_not_trusted() -> None:
    cache = JobAllocCache()
    cache.keep("default", "web", 10, [_a("a1", 3, 3), _a("a2", 5, 5)])
    assert cache.merge("default", "web", _delta(1, 5)) is None  # one deleted since (GC)
    assert cache.merge("default", "web", _delta(2, 9)) is None  # a create not carried
    assert cache.merge("default", "web", _delta(2, 5, complete=False)) is None
    # a replica that does not know delta reads answers without alloc_set
    old = state_pb2.JobSnapshot(allocations_complete=True)
    assert cache.merge("default", "web", old) is None
    assert cache.merge("default", "db", _delta(0, 0)) is None  # nothing kept
    assert (cache.hits, cache.misses) == (0, 5)


def test_the_most_recently_planned_jobs_are_kept_up_to_the_bound() -> None:
    cache = JobAllocCache(max_jobs=2)
    for job in ("a", "b", "c"):
        cache.keep("default", job, 1, [])
    assert [cache.since("default", j) for j in ("a", "b", "c")] == [0, 1, 1]

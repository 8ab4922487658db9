"""One evaluation's job read at one revision (state.core.job_snapshot): the
job, its versions newest first, the newest deployment of its version, its
allocations of its namespace only, and none past the limit."""

from __future__ import annotations

from typing import Any

from state_core_data import tables

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.state.core import codec
from drover.state.core.query_specs import versions_of
from drover.state.jobs.core.job_snapshot import job_snapshot


def _job(version: int, ns: str = "default") -> job_pb2.Job:
    return job_pb2.Job(id="web", namespace=ns, version=version)


def _alloc(aid: str, ns: str = "default") -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=aid, namespace=ns, job_id="web")


def _dep(did: str, version: int) -> deployment_pb2.Deployment:
    return deployment_pb2.Deployment(id=did, namespace="default", job_id="web",
                                      job_version=version)


def test_the_job_its_versions_its_deployment_and_allocations() -> None:
    rev = iter(range(1, 100))
    objects: list[tuple[str, Any, int, int]] = [(codec.JOBS, _job(2), 1, next(rev))]
    objects += [(codec.JOB_VERSIONS, _job(v), r, r) for v in (1, 2) for r in [next(rev)]]
    objects += [(codec.DEPLOYMENTS, _dep(d, v), r, r)
                for d, v in (("old", 1), ("first", 2), ("newest", 2)) for r in [next(rev)]]
    objects += [(codec.ALLOCATIONS, _alloc(a, ns), r, r)
                for a, ns in (("a1", "default"), ("x", "other"), ("a2", "default"))
                for r in [next(rev)]]
    objects.append((codec.JOBS, _job(1, "other"), 90, 90))
    held = tables(objects)
    snap = job_snapshot(held, "default", "web", versions_of(held, "default", "web"))
    assert snap.HasField("job") and snap.job.version == 2
    assert [v.version for v in snap.versions] == [2, 1]
    assert snap.deployment.id == "newest"
    assert snap.allocations_complete
    assert [a.id for a in snap.allocations] == ["a1", "a2"]  # create order, this namespace


def test_no_job_still_answers_its_allocations_and_a_big_one_none() -> None:
    objects = [(codec.ALLOCATIONS, _alloc(f"a{i}"), i + 1, i + 1) for i in range(5)]
    held = tables(objects)
    gone = job_snapshot(held, "default", "web", versions_of(held, "default", "web"))
    assert not gone.HasField("job") and not gone.HasField("deployment") and not gone.versions
    assert gone.allocations_complete and len(gone.allocations) == 5
    assert job_snapshot(held, "default", "web", [], limit=5).allocations_complete
    big = job_snapshot(held, "default", "web", [], limit=4)
    assert not big.allocations_complete and not big.allocations


def test_a_delta_read_carries_what_changed_and_the_whole_sets_numbers() -> None:
    """``modified_after``: only the allocations modified since (a1 created
    at 1, modified at 7; a2 at 2; a3 created at 5), whatever is carried the
    whole set's count and newest create index; past the limit, none."""
    held = tables([(codec.ALLOCATIONS, _alloc("a1"), 1, 7), (codec.ALLOCATIONS, _alloc("a2"), 2, 2),
                   (codec.ALLOCATIONS, _alloc("a3"), 5, 5),
                   (codec.ALLOCATIONS, _alloc("x", "other"), 6, 6)])
    delta = job_snapshot(held, "default", "web", [], modified_after=4)
    assert [a.id for a in delta.allocations] == ["a1", "a3"] and delta.allocations_complete
    assert (delta.alloc_set.count, delta.alloc_set.max_create_index) == (3, 5)
    whole = job_snapshot(held, "default", "web", [])
    assert [a.id for a in whole.allocations] == ["a1", "a2", "a3"]
    assert (whole.alloc_set.count, whole.alloc_set.max_create_index) == (3, 5)
    over = job_snapshot(held, "default", "web", [], limit=1, modified_after=4)
    assert not over.allocations_complete and not over.allocations
    assert over.alloc_set.count == 3

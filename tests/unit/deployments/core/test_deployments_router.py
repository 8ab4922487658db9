"""The allocation demultiplexer wakes only the owning watcher, only when it matters."""

from __future__ import annotations

from deployments_builders import alloc

from drover.api.types.v1 import allocation_pb2
from drover.deployments.core.router import AllocRouter, RouterStats


def test_routes_to_the_owner_only() -> None:
    r = AllocRouter()
    r.watch("d1")
    r.watch("d2")
    assert r.route(alloc("a1", deployment_id="d1")) == "d1"
    assert r.route(alloc("b1", deployment_id="d2")) == "d2"
    assert r.wakeups("d1") == 1 and r.wakeups("d2") == 1


def test_a_client_status_wakes_only_into_or_between_terminal_ones() -> None:
    r = AllocRouter()
    r.watch("d1")
    a = alloc("a1", client_status=allocation_pb2.ALLOC_CLIENT_STATUS_PENDING)
    assert r.route(a) == "d1"  # new placement
    a.modify_index += 1
    a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
    assert r.route(a) is None  # pending and running count the same
    a.modify_index += 1
    a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
    assert r.route(a) == "d1"
    a.modify_index += 1
    a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
    assert r.route(a) == "d1"  # one terminal status to another


def test_unwatched_deployments_wake_nobody() -> None:
    r = AllocRouter()
    r.watch("d1")
    assert r.route(alloc("x", deployment_id="other")) is None
    assert r.route(alloc("y", deployment_id="")) is None
    assert r.stats().ignored == 2


def test_only_changes_that_matter_wake() -> None:
    r = AllocRouter()
    r.watch("d1")
    a = alloc("a1")
    assert r.route(a) == "d1"  # new placement
    a.modify_index += 1
    a.client_description = "still running"
    assert r.route(a) is None  # nothing a deployment cares about
    a.deployment_status.healthy = True
    assert r.route(a) == "d1"  # health
    a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
    assert r.route(a) == "d1"  # client status
    assert r.route(a) is None  # redelivery
    assert r.wakeups("d1") == 3
    assert r.stats() == RouterStats(
        watched_deployments=1, watched_allocations=1, wakeups=3, ignored=2
    )


def test_known_allocations_given_at_watch_time_do_not_wake() -> None:
    r = AllocRouter()
    r.watch("d1", [alloc("a1", healthy=True), alloc("z", deployment_id="d9")])
    assert r.route(alloc("a1", healthy=True)) is None
    assert r.stats().watched_allocations == 1


def test_deletions_reach_the_owner_by_allocation_id() -> None:
    r = AllocRouter()
    r.watch("d1")
    r.route(alloc("a1"))
    assert r.route_deleted("a1") == "d1"
    assert r.route_deleted("a1") is None
    assert r.route_deleted("never-seen") is None


def test_unwatch_forgets_the_allocations() -> None:
    r = AllocRouter()
    r.watch("d1")
    r.route(alloc("a1"))
    r.unwatch("d1")
    assert not r.watching("d1")
    assert r.route_deleted("a1") is None
    assert r.stats().watched_allocations == 0


def test_many_deployments_one_router() -> None:
    r = AllocRouter()
    for i in range(100):
        r.watch(f"d{i}")
    assert r.route(alloc("only", deployment_id="d42")) == "d42"
    assert [i for i in range(100) if r.wakeups(f"d{i}")] == [42]


def test_a_stale_version_wakes_nobody() -> None:
    r = AllocRouter()
    r.watch("d1", [alloc("a1", healthy=True, modify_index=7)])
    assert r.route(alloc("a1", modify_index=5)) is None  # older than what was listed
    assert r.stats().ignored == 1
    assert r.route(alloc("a1", healthy=False, modify_index=8)) == "d1"

"""ClusterView.reserve/release: placements counted while submitted, replaced
by the stream's copy once committed, taken back when not committed."""

from __future__ import annotations

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.worker.resources import Vec
from drover.worker.view import ClusterView

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP


def _alloc(alloc_id: str, node: str = "n1",
           desired: allocation_pb2.AllocDesiredStatus = RUN) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=alloc_id, node_id=node, desired_status=desired,
                                     resources=job_pb2.Resources(cpu=100, memory_mb=300))


def test_a_reserved_placement_counts_once_the_stream_brings_it() -> None:
    view = ClusterView(stub=None)
    view.reserve([_alloc("a"), _alloc("b")])
    assert view.used["n1"] == Vec(cpu=200, memory_mb=600)
    view._apply_alloc(_alloc("a"))  # the stream's copy of the committed one
    assert view.used["n1"] == Vec(cpu=200, memory_mb=600)


def test_placements_not_committed_are_taken_back() -> None:
    view = ClusterView(stub=None)
    view._apply_alloc(_alloc("old"))
    view.reserve([_alloc("a"), _alloc("b", node="n2")])
    view.release([_alloc("b", node="n2")])
    assert view.used["n1"] == Vec(cpu=200, memory_mb=600)
    assert view.used["n2"] == Vec()


def test_a_stop_frees_room_only_when_the_stream_shows_it() -> None:
    view = ClusterView(stub=None)
    view._apply_alloc(_alloc("old"))
    view.reserve([_alloc("new")])  # a plan's stops are not reserved
    assert view.used["n1"] == Vec(cpu=200, memory_mb=600)
    view._apply_alloc(_alloc("old", desired=STOP))
    assert view.used["n1"] == Vec(cpu=100, memory_mb=300)

"""ClusterView.reserve/release: placements counted while submitted, replaced
by the stream's copy once committed, taken back when not committed; the
node set every plan reads (:mod:`drover.worker.node_set`), one until a node
changes."""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2, query_pb2
from drover.worker.node_set import NodeSet, node_set
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


class _Stub:
    """ListNodes, ListAllocations and a Subscribe stream fed by the test."""

    def __init__(self, nodes: list[Any]) -> None:
        import asyncio

        self.nodes = nodes
        self.events: asyncio.Queue[Any] = asyncio.Queue()

    async def ListNodes(self, req: Any, **_: Any) -> Any:
        return state_pb2.ListNodesResponse(nodes=self.nodes, meta=query_pb2.QueryMeta(index=5))

    async def ListAllocations(self, req: Any, **_: Any) -> Any:
        return state_pb2.ListAllocationsResponse()

    async def _stream(self) -> Any:
        while True:
            yield await self.events.get()

    def Subscribe(self, req: Any, **_: Any) -> Any:
        return self._stream()


def _node(node_id: str, status: Any = node_pb2.NODE_STATUS_READY, dc: str = "dc1") -> Any:
    return node_pb2.Node(id=node_id, datacenter=dc, status=status, modify_index=3,
                         resources=job_pb2.Resources(cpu=1000, memory_mb=1000))


async def test_plans_share_one_node_set_until_a_node_changes() -> None:
    import asyncio

    stub = _Stub([_node("n1"), _node("n2", dc="dc2")])
    view = ClusterView(stub)
    task = asyncio.create_task(view.run())
    try:
        await asyncio.wait_for(view.ready.wait(), 5)
        first = view.node_set()
        assert [n.id for n in first.candidates(["dc1"])] == ["n1"]
        assert not first.lost_on("n1") and not first.lost_on("n2")
        assert first.by_id["n2"].modify_index == 3
        # an allocation changes no node: the next plan reads the same set
        stub.events.put_nowait(state_pb2.SubscribeResponse(index=6, events=[state_pb2.Event(
            type=state_pb2.EVENT_TYPE_UPSERT, allocation=_alloc("a"))]))
        await view.wait_past(6, within=5)
        assert view.node_set() is first
        # a node goes down: the next plan reads a set that knows it
        stub.events.put_nowait(state_pb2.SubscribeResponse(index=7, events=[state_pb2.Event(
            type=state_pb2.EVENT_TYPE_UPSERT, node=_node("n1", node_pb2.NODE_STATUS_DOWN))]))
        await view.wait_past(7, within=5)
        second = view.node_set()
        assert second is not first and second.lost_on("n1") and not second.lost_on("n2")
        assert second.candidates(["dc1"]) == []
        assert second.candidates(["*"]) == [_node("n2", dc="dc2")]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_node_set_derives_what_the_plain_nodes_say() -> None:
    nodes = [_node("a"), _node("b", node_pb2.NODE_STATUS_DOWN), _node("c", dc="dc2"),
             _node("d"), _node("e", node_pb2.NODE_STATUS_INITIALIZING),
             _node("f", node_pb2.NODE_STATUS_DISCONNECTED)]
    nodes[3].drain = True
    ns = NodeSet(nodes)
    assert list(ns) == nodes and len(ns) == 6 and ns[2] is nodes[2]
    assert [n.id for n in ns.candidates([])] == ["a", "c"]
    assert [n.id for n in ns.candidates(["dc1", "dc3"])] == ["a"]
    # lost: gone, down or disconnected; draining and initializing keep theirs
    assert [i for i in "abcdefg" if ns.lost_on(i)] == ["b", "f", "g"]
    got = ns.candidates([])
    got.reverse()  # the caller's own list: the set's order is kept
    assert [n.id for n in ns.candidates([])] == ["a", "c"]
    assert node_set(ns) is ns and list(node_set(nodes)) == nodes

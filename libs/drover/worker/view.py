"""The worker's view of the cluster: nodes and what each one reserves.

An informer: one paged List of nodes and allocations, then one Subscribe to
the Node and Allocation topics from the index of that read. It may lag the
store by a moment; that is safe because the state service re-checks every
node's capacity when the plan is submitted (PLAN_STALE, and the worker
plans again). The job's own allocations are read consistently per plan,
not from here, so the plan's alloc_indexes are exact.

A worker's scheduling loops plan side by side over this one view, so a
plan's placements are counted here as it is submitted (:meth:`reserve`),
before the stream brings them: the other loops plan around them instead of
onto the same room (Nomad's plan applier evaluates each plan against the
ones before it the same way). The count is keyed by allocation id, so the
stream's copy of a committed placement replaces the reserved one;
placements that were not committed are taken back (:meth:`release`). Stops
are never counted ahead: room is freed when the stream shows the stop
committed, so nothing is planned into room that is not yet free.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2

from .node_set import NodeSet
from .resources import Vec, is_live

log = logging.getLogger(__name__)

PAGE = 1000
#: The heartbeat interval the view's stream asks for (the state service's
#: least): a heartbeat carries the index the stream has passed, so the view's
#: index follows every change within this, not only the Node and Allocation
#: changes it holds. A worker waits for the view to pass its evaluation's
#: wait index before planning; with the default 10 s heartbeat an evaluation
#: written after the last placement waited its whole bound (1 s) for nothing.
FOLLOW_INTERVAL = 0.1


class ClusterView:
    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.nodes: dict[str, node_pb2.Node] = {}
        self._node_set: NodeSet | None = None  # of ``nodes``; None: changed since
        self._allocs: dict[str, tuple[str, Vec]] = {}  # live alloc id -> (node, reserved)
        self.used: dict[str, Vec] = {}
        #: Placements reserved and not yet seen committed: carried over a
        #: reload, whose list may have been read before they committed.
        self._reserved: dict[str, allocation_pb2.Allocation] = {}
        self.index = 0
        self.ready = asyncio.Event()
        self._changed = asyncio.Event()
        #: The stream being followed (None while listing), and whether it
        #: was cut to reload.
        self._stream: Any = None
        self._reloading = False

    def _apply_alloc(self, a: allocation_pb2.Allocation, deleted: bool = False) -> None:
        _apply(self._allocs, self.used, a, deleted)

    def reserve(self, placements: Iterable[allocation_pb2.Allocation]) -> None:
        """Count placements being submitted (not yet committed) on their nodes."""
        for a in placements:
            self._reserved[a.id] = a
            self._apply_alloc(a)

    def release(self, placements: Iterable[allocation_pb2.Allocation]) -> None:
        """Take back reserved placements that were not committed. (One whose
        outcome is unknown may have been: if the stream brought it first it
        is taken back too, and the view counts less than the node holds
        until it reloads -- safe, the state service judges every plan.)"""
        for a in placements:
            self._reserved.pop(a.id, None)
            self._apply_alloc(a, deleted=True)

    def node_set(self) -> NodeSet:
        """The nodes as they are now, as one :class:`.node_set.NodeSet`: the
        same one for every plan until a node changes (its derived facts
        then derived once for all of them)."""
        if self._node_set is None:
            self._node_set = NodeSet(self.nodes.values())
        return self._node_set

    async def _load(self) -> int:
        """List nodes and live allocations into new tables, then put them in
        place at once: until then plans go on over the old ones (a view
        emptied while it lists would send every evaluation planned meanwhile
        to blocked, for want of nodes)."""
        nodes: dict[str, node_pb2.Node] = {}
        allocs: dict[str, tuple[str, Vec]] = {}
        used: dict[str, Vec] = {}
        index = 0
        token = ""
        while True:
            resp = await self._stub.ListNodes(state_pb2.ListNodesRequest(
                page_size=PAGE, page_token=token), timeout=30)
            index = index or resp.meta.index
            nodes.update((n.id, n) for n in resp.nodes)
            token = resp.next_page_token
            if not token:
                break
        while True:
            resp = await self._stub.ListAllocations(state_pb2.ListAllocationsRequest(
                namespace="*", page_size=PAGE, page_token=token,
                filter='desired_status == "run"'), timeout=30)
            for a in resp.allocations:
                _apply(allocs, used, a)
            token = resp.next_page_token
            if not token:
                break
        for a in list(self._reserved.values()):  # submitted meanwhile, not yet listed
            if a.id in allocs:
                del self._reserved[a.id]
            else:
                _apply(allocs, used, a)
        self.nodes, self._allocs, self.used, self._node_set = nodes, allocs, used, None
        return int(index)

    def _follow(self, resp: state_pb2.SubscribeResponse) -> None:
        for ev in resp.events:
            deleted = ev.type == state_pb2.EVENT_TYPE_DELETE
            if ev.HasField("node"):
                self._node_set = None
                if deleted:
                    self.nodes.pop(ev.key, None)
                else:
                    self.nodes[ev.node.id] = ev.node
            elif ev.HasField("allocation"):
                self._reserved.pop(ev.allocation.id, None)
                self._apply_alloc(ev.allocation, deleted)
        self.index = max(self.index, resp.index)
        self._advanced()

    def _advanced(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def run(self) -> None:
        """Load, then follow the stream; reload after any break."""
        while True:
            try:
                self.index = await self._load()
                self.ready.set()
                self._advanced()  # a wait for an index the list passed is over
                request = state_pb2.SubscribeRequest(
                    topics=[state_pb2.TOPIC_NODE, state_pb2.TOPIC_ALLOCATION],
                    from_index=self.index)
                request.heartbeat_interval.FromMilliseconds(int(FOLLOW_INTERVAL * 1000))
                self._stream = self._stub.Subscribe(request)
                async for resp in self._stream:
                    self._follow(resp)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not self._reloading or (task is not None and task.cancelling()):
                    raise  # the view itself is stopped
            except grpc.RpcError as e:
                log.warning("worker view: %s; reloading", e)
                await asyncio.sleep(0.5)
            finally:
                self._stream = None
                self._reloading = False

    def reload(self, why: str) -> None:
        """List everything again and follow from there: the stream is proven
        behind (a wait for an index the state service named timed out), so
        what it holds may be stale (Nomad plans again on a snapshot at the
        refresh index, never on an older one)."""
        if self._stream is None or self._reloading:
            return
        log.warning("worker view: %s; reloading", why)
        self._reloading = True
        self._stream.cancel()

    async def wait_past(self, index: int, within: float) -> bool:
        """Until the view has seen ``index`` (or ``within`` seconds passed: it
        may simply have had nothing to deliver); whether it has."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while self.index < index:
            left = deadline - loop.time()
            if left <= 0:
                return False
            try:
                async with asyncio.timeout(left):
                    await self._changed.wait()
            except TimeoutError:
                return self.index >= index
        return True


def _apply(allocs: dict[str, tuple[str, Vec]], used: dict[str, Vec],
           a: allocation_pb2.Allocation, deleted: bool = False) -> None:
    """Count ``a`` on its node in ``used`` (keyed in ``allocs`` by id, so a
    later copy replaces an earlier one), or take it back if it is deleted or
    no longer live."""
    old = allocs.pop(a.id, None)
    if old is not None:
        used[old[0]] = used.get(old[0], Vec()) - old[1]
    if not deleted and is_live(a):
        res = Vec.of(a.resources)
        allocs[a.id] = (a.node_id, res)
        used[a.node_id] = used.get(a.node_id, Vec()) + res

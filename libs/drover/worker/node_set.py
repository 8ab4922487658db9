"""The nodes a plan is computed over, with what every plan asks of them
derived once (pure).

Every evaluation's plan reads the whole cluster's nodes: the candidates
for placements (schedulable, in the job's datacenters), the ones whose
allocations are lost, each node's ``modify_index`` for the plan's
nodes. Read from each node message per plan, that is several field reads
per node per evaluation: at 5,000 nodes, most of a rolling update's
evaluation when it replaces 25 allocations. The worker's view
(:class:`.view.ClusterView`) hands every plan the same :class:`NodeSet`
until a node changes, so each fact is derived once per change of the
nodes, not once per plan. A plain sequence of nodes (a test's snapshot)
is taken as it is (:func:`node_set`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import overload

from drover.api.types.v1 import node_pb2
from drover.scheduling.eligibility import UNRESPONSIVE, schedulable


class NodeSet(Sequence[node_pb2.Node]):
    """The nodes, in the order given, and facts about them derived on first use."""

    def __init__(self, nodes: Iterable[node_pb2.Node]) -> None:
        self._nodes = list(nodes)
        self._candidates: dict[frozenset[str], list[node_pb2.Node]] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    @overload
    def __getitem__(self, i: int) -> node_pb2.Node: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[node_pb2.Node]: ...

    def __getitem__(self, i: int | slice) -> node_pb2.Node | Sequence[node_pb2.Node]:
        return self._nodes[i]

    def __iter__(self) -> Iterator[node_pb2.Node]:
        return iter(self._nodes)

    @cached_property
    def by_id(self) -> dict[str, node_pb2.Node]:
        return {n.id: n for n in self._nodes}

    def lost_on(self, node_id: str) -> bool:
        """Whether an allocation on ``node_id`` is lost: its node is gone,
        down or disconnected (Nomad's tainted nodes, less the draining ones,
        whose allocations stay until the drainer marks them). A node that
        is initializing (a client restarting) keeps its allocations."""
        return node_id not in self.by_id or node_id in self._unresponsive

    @cached_property
    def _unresponsive(self) -> frozenset[str]:
        return frozenset(n.id for n in self._nodes if n.status in UNRESPONSIVE)

    @cached_property
    def _schedulable(self) -> list[node_pb2.Node]:
        return [n for n in self._nodes if schedulable(n)]

    def candidates(self, datacenters: Iterable[str]) -> list[node_pb2.Node]:
        """The schedulable nodes in ``datacenters`` (empty or ``*``: any), in
        the set's order; a new list each call (the caller may shuffle it)."""
        dcs = frozenset(datacenters)
        found = self._candidates.get(dcs)
        if found is None:
            found = self._candidates[dcs] = [
                n for n in self._schedulable if not dcs or "*" in dcs or n.datacenter in dcs]
        return list(found)


def node_set(nodes: Sequence[node_pb2.Node]) -> NodeSet:
    """``nodes`` as a :class:`NodeSet` (itself when it is one)."""
    return nodes if isinstance(nodes, NodeSet) else NodeSet(nodes)

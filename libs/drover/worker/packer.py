"""Bin-packing a plan's placements over the candidate nodes (pure).

Nomad's rank iterator in small: the candidates are the schedulable nodes of
the job's datacenters, shuffled once per plan; each placement scores the
first ``limit`` nodes that fit (``limit`` grows with log2 of the node count,
as Nomad limits its candidates) with Nomad's best-fit score less a penalty
for the job's allocations of the group already on the node (spread), and a
replacement's penalty nodes are passed over; the next search starts after
the chosen node, so ties spread. The packer tracks what this plan itself
places and frees, on top of what the snapshot says each node reserves.
"""

from __future__ import annotations

import math
import random

from drover.api.types.v1 import allocation_pb2, node_pb2

from . import penalty as node_penalty
from .node_set import node_set
from .plan import Snapshot
from .resources import Vec, is_live

_NONE = Vec()


class Packer:
    """Bin-packing over the candidate nodes, tracking this plan's own use."""

    def __init__(self, snap: Snapshot, rng: random.Random) -> None:
        dcs = snap.job.datacenters if snap.job is not None else ()
        self.nodes = node_set(snap.nodes).candidates(dcs)
        rng.shuffle(self.nodes)
        # A node's id and capacity read only once it is looked at (a plan
        # looks at a few of a large cluster's nodes).
        self._ids: list[str | None] = [None] * len(self.nodes)
        self._caps: list[Vec | None] = [None] * len(self.nodes)
        #: Per node id: what it reserves with this plan's own changes (a copy).
        self.used: dict[str, Vec] = dict(snap.node_used)
        self.limit = max(2, math.ceil(math.log2(len(self.nodes)))) if self.nodes else 0
        self.groups: dict[tuple[str, str], int] = {}  # (node, group) -> allocs of the job
        for a in snap.allocs:
            if is_live(a):
                key = (a.node_id, a.task_group)
                self.groups[key] = self.groups.get(key, 0) + 1
        self._offset = 0

    def release(self, a: allocation_pb2.Allocation) -> None:
        """A stopped allocation's room is free for this plan's placements
        (the state service's capacity check counts it the same way)."""
        if is_live(a):
            self.used[a.node_id] = self.used.get(a.node_id, _NONE) - Vec.of(a.resources)

    def restore(self, a: allocation_pb2.Allocation) -> None:
        """A stop taken back: what ``a`` reserves is used again (as
        :meth:`release` freed it: only a live allocation's)."""
        if is_live(a):
            self.used[a.node_id] = self.used.get(a.node_id, _NONE) + Vec.of(a.resources)

    def place(self, group: str, ask: Vec, count: int,
              avoid: frozenset[str] = frozenset()) -> node_pb2.Node | None:
        """The best of the first ``limit`` fitting nodes; ``avoid`` are a
        replacement's penalty nodes (:mod:`.penalty`)."""
        best: tuple[float, int] | None = None
        seen = skipped = 0
        n = len(self.nodes)
        ids, caps, used = self._ids, self._caps, self.used
        for i in range(n):
            at = (self._offset + i) % n
            node_id, cap = ids[at], caps[at]
            if node_id is None:
                node_id = ids[at] = self.nodes[at].id
            if cap is None:
                cap = caps[at] = Vec.of(self.nodes[at].resources)
            now = used.get(node_id, _NONE)
            cpu, memory = now.cpu + ask.cpu, now.memory_mb + ask.memory_mb
            if cpu > cap.cpu or memory > cap.memory_mb:
                continue
            # Nomad's best-fit score: fuller nodes score higher (0..1).
            free_cpu = 1 - cpu / cap.cpu if cap.cpu else 0.0
            free_mem = 1 - memory / cap.memory_mb if cap.memory_mb else 0.0
            fit = (20 - (10 ** free_cpu + 10 ** free_mem)) / 18
            penalty = self.groups.get((node_id, group), 0) / max(1, count)
            score = fit - penalty
            if node_id in avoid:
                score -= node_penalty.SCORE
            if best is None or score > best[0]:
                best = (score, at)
            if node_id in avoid and skipped < node_penalty.MAX_SKIP:
                skipped += 1  # passed over: not counted against the limit
                continue
            seen += 1
            if seen >= self.limit:
                break
        if best is None:
            return None
        at = best[1]
        node = self.nodes[at]
        # Start the next search after the chosen node: spreads ties.
        self._offset = (at + 1) % n
        self.used[node.id] = used.get(node.id, _NONE) + ask
        self.groups[(node.id, group)] = self.groups.get((node.id, group), 0) + 1
        return node

"""Room on a node at commit time, ordered by etcd: the per-node usage record.

Nomad orders plans through one queue on its leader and re-checks every
node a plan touches against the state that includes every earlier plan
(``evaluateNodePlan``). Here any state replica applies plans, so the order
comes from etcd instead:

- every plan that places on a node rewrites the node's usage record
  (``node_usage/-/<node id>``, a :class:`~drover.api.types.v1.node_pb2.NodeUsage`)
  and compares, in the same txn, its mod revision with the one in the
  synced view the room was computed on. Every placement onto a node goes
  through such a txn, so a placement committed after the view was read
  (through this replica or any other) changed the record, and the txn
  fails instead of overcommitting; the applier then re-syncs and judges
  again (:mod:`drover.state.allocations.plans`);
- a plan that only stops or updates in place on a node rewrites the record
  too (a racing placement there is judged again, on the room the stop
  freed) but does not compare it: room freed can never overcommit, and not
  comparing keeps a stop from being refused by a placement next to it;
- room is the node's resources minus what its live allocations reserve in
  the view, with the plan's own stops and in-place updates swapped in by
  id (Nomad's ``proposed = existing - updates - placements + placements``),
  so an allocation is never counted twice;
- writes that only free room (a client reporting an allocation terminal, a
  node marked down) need not touch the record: a view that missed them
  sees less room, never more. Nothing else may add a live allocation to a
  node (UpsertAllocations is management-only).

The rule is Nomad's, reasons included: a node with no placements in the
plan always fits; otherwise it must exist ("node does not exist"), be
schedulable (:mod:`drover.scheduling.eligibility`, which names why not),
and have room ("node has no room: cpu", then
memory). A node refused because other plans kept changing it while this
one was applied is "node changed" (:data:`NODE_CHANGED`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.scheduling import eligibility
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder
from drover.state.core.view import View
from drover.worker.resources import Vec, is_live

NODE_GONE = "node does not exist"
NO_ROOM = "node has no room: "
NODE_CHANGED = "node changed"



@dataclass
class NodePart:
    """One node's part of a plan: new allocations and changed existing ones.

    A part is judged and ordered against one view (one attempt of one
    plan), so what would be live on its node is worked out once and kept
    (``after``)."""

    node_id: str
    placements: list[allocation_pb2.Allocation] = field(default_factory=list)
    updates: list[allocation_pb2.Allocation] = field(default_factory=list)
    #: What would be live on the node once committed: (reserved, how many).
    after: tuple[Vec, int] | None = field(default=None, compare=False)


def by_node(placements: Iterable[allocation_pb2.Allocation],
            updates: Iterable[tuple[str, allocation_pb2.Allocation]]) -> dict[str, NodePart]:
    """The plan split per node; ``updates`` are (node the allocation is on, new value)."""
    parts: dict[str, NodePart] = {}
    for a in placements:
        parts.setdefault(a.node_id, NodePart(a.node_id)).placements.append(a)
    for node_id, u in updates:
        parts.setdefault(node_id, NodePart(node_id)).updates.append(u)
    return parts


def short_of(capacity: Vec, need: Vec) -> str | None:
    """The first dimension ``need`` exceeds ``capacity`` in (Nomad's order:
    cpu, then memory), or None when it fits."""
    if need.cpu > capacity.cpu:
        return "cpu"
    if need.memory_mb > capacity.memory_mb:
        return "memory"
    return None


def live_after(view: View, part: NodePart) -> tuple[Vec, int]:
    """What would be live on the part's node once it is committed, and how
    many allocations: the node's live ones less those the part changes (by
    id), plus its placements and its updates that stay live (Nomad's
    ``proposed``), from the view's per-node reservations, no allocation
    decoded. Kept on the part."""
    if part.after is None:
        total, live = view.node_live(part.node_id)
        count = len(live)
        for a in (*part.placements, *part.updates):
            was = live.get(f"{a.namespace}/{a.id}")
            if was is not None:
                total, count = total - was, count - 1
            if is_live(a):
                total, count = total + Vec.of(a.resources), count + 1
        part.after = (total, count)
    return part.after


def refusal(view: View, part: NodePart) -> str | None:
    """Why the node cannot take its part of the plan (module doc), or None."""
    if not part.placements:
        return None
    found = view.get(codec.NODES, codec.GLOBAL_NS, part.node_id)
    if found is None:
        return NODE_GONE
    node = found.obj
    why = eligibility.refusal(node)
    if why is not None:
        return why
    dim = short_of(Vec.of(node.resources), live_after(view, part)[0])
    return NO_ROOM + dim if dim else None


def record(view: View, part: NodePart, eval_id: str) -> node_pb2.NodeUsage:
    """The node's usage record once the part is committed."""
    reserved, count = live_after(view, part)
    return node_pb2.NodeUsage(node_id=part.node_id, reserved=reserved.proto(),
                              allocations=count, eval_id=eval_id)


def order(plan: PlanBuilder, view: View, part: NodePart, eval_id: str) -> None:
    """Rewrite the node's usage record in ``plan``; compared on the view's
    mod revision when the part places (module doc)."""
    mod = view.mod(codec.NODE_USAGE, codec.GLOBAL_NS, part.node_id)
    plan.put(codec.NODE_USAGE, codec.GLOBAL_NS, part.node_id, record(view, part, eval_id),
             mod if part.placements else None)


def judge(view: View, parts: Mapping[str, NodePart]) -> dict[str, str]:
    """Per node of the plan that cannot take its part: the reason."""
    out = {}
    for node_id, part in sorted(parts.items()):
        why = refusal(view, part)
        if why is not None:
            out[node_id] = why
    return out

"""Blocked evaluations: what unblocks them, and the missed unblock (pure).

Nomad's blocked_evals, with etcd as the order instead of a leader's memory:

- **every capacity change unblocks**, in the txn that makes it: a node
  becoming schedulable (registers ready, turns ready or eligible, a drain
  cancelled with eligibility), a plan stopping allocations, and a client
  reporting an allocation complete, failed or lost (Nomad's FSM unblocks on
  the client's terminal update; the room is free only then);
- **by what it needs**, not every blocked evaluation up to the txn cap: a
  changed node unblocks a blocked evaluation only when the node is in one of
  its ``blocked_datacenters`` and its ``blocked_ask`` fits the room the node
  has after the txn (Nomad unblocks by computed class; here the class is
  the datacenter and the room). One without a recorded need (older
  writers) is unblocked by any change, as before;
- **the missed unblock**: a blocked evaluation carries the index its plan was
  computed at (``snapshot_index``). Written blocked when a node it could use
  changed after that index (the node itself, or an allocation on it that
  stopped) and has room for it now, it is stored pending at once: the
  capacity change came between the worker's read and this write, and would
  otherwise never wake it (Nomad's ``missedUnblock``);
- at most one blocked evaluation per job is the eval broker's rule (it
  holds them in memory as Nomad's leader does, keeps the newest by
  ``max(create_index, snapshot_index)`` and writes the older cancelled).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from drover.api.types.v1 import evaluation_pb2, node_pb2
from drover.scheduling.eligibility import schedulable
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext
from drover.state.core.view import View, found_all
from drover.worker.resources import Vec, is_live, used

BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED
PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING


@dataclass(frozen=True)
class Room:
    """A node whose capacity changed in this txn, as it will be after it."""

    node: node_pb2.Node
    free: Vec


_NOTHING = Vec()


def room_on(view: View, node: node_pb2.Node, freed: Vec = _NOTHING) -> Room:
    """``node``'s free room: capacity less its live allocations on the view,
    plus what this txn frees beyond the view (stops it writes)."""
    on = (f.obj for _, f in found_all(view, codec.ALLOCATIONS, "node_id", node.id))
    return Room(node, Vec.of(node.resources) - used(on) + freed)


def changed_rooms(view: View, freed: Mapping[str, Vec]) -> Iterator[Room]:
    """The rooms of the nodes (by id) where this txn frees ``freed``; lazy:
    working a room out reads every allocation on its node, which is wasted
    when no evaluation is blocked (:func:`unblock_where` asks only then)."""
    for node_id, vec in sorted(freed.items()):
        found = view.get(codec.NODES, codec.GLOBAL_NS, node_id)
        if found is not None:
            yield room_on(view, found.obj, vec)


def wants(ev: evaluation_pb2.Evaluation, room: Room) -> bool:
    """Would ``ev``'s blocked placements fit in ``room``?"""
    if not schedulable(room.node):
        return False
    dcs = ev.blocked_datacenters
    if dcs and "*" not in dcs and room.node.datacenter not in dcs:
        return False
    if not ev.HasField("blocked_ask"):
        return True  # no need recorded: any capacity change may help
    return Vec.of(ev.blocked_ask).fits_in(room.free)


def unblock_where(view: View, ctx: WriteContext, plan: PlanBuilder, rooms: Iterable[Room],
                  budget: int, skip: tuple[str, str] | None = None) -> int:
    """Store as pending (each compared) the blocked evaluations that one of
    ``rooms`` now fits, at most ``budget``; how many. ``rooms`` is read
    only when some evaluation is blocked."""
    if budget <= 0:
        return 0
    blocked = view.ids(codec.EVALUATIONS, "status", "blocked")
    first = next(blocked, None)
    if first is None:
        return 0
    rooms = [r for r in rooms if schedulable(r.node)]
    if not rooms:
        return 0
    n = 0
    for nsid in itertools.chain((first,), blocked):
        if n >= budget:
            break
        ns, _, eid = nsid.partition("/")
        found = view.get(codec.EVALUATIONS, ns, eid)
        if found is None:
            continue
        ev = found.obj
        if ev.status != BLOCKED or (skip and (ev.namespace, ev.job_id) == skip):
            continue
        room = next((r for r in rooms if wants(ev, r)), None)
        if room is None:
            continue
        ev.status = PENDING
        ev.status_description = f"unblocked: capacity changed on node {room.node.id}"
        ev.modify_time.CopyFrom(ctx.now)
        plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, found.mod)
        n += 1
    return n


def missed_unblock(view: View, ev: evaluation_pb2.Evaluation) -> str | None:
    """The node whose capacity changed after ``ev.snapshot_index`` and now fits
    it (the unblock it missed), or None. 0: index unknown, never missed."""
    since = ev.snapshot_index
    if ev.status != BLOCKED or not since:
        return None
    for nid in view.ids(codec.NODES, "status", "ready"):
        _, _, node_id = nid.partition("/")
        found = view.get(codec.NODES, codec.GLOBAL_NS, node_id)
        if found is None or not schedulable(found.obj):
            continue
        allocs = found_all(view, codec.ALLOCATIONS, "node_id", node_id)
        changed = found.mod > since or any(
            f.mod > since and not is_live(f.obj) for _, f in allocs)
        if changed and wants(ev, room_on(view, found.obj)):
            return node_id
    return None


def admit_blocked(view: View, ev: evaluation_pb2.Evaluation) -> None:
    """A blocked evaluation about to be created: pending at once when it
    missed an unblock (module doc)."""
    node_id = missed_unblock(view, ev)
    if node_id is not None:
        ev.status = PENDING
        ev.status_description = (f"unblocked at once: capacity changed on node {node_id} "
                                 f"after its snapshot (index {ev.snapshot_index})")

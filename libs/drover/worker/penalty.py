"""Nomad's node-reschedule-penalty (pure): a rescheduled allocation's
replacement avoids the nodes its predecessors failed on.

Nomad's ``getSelectOptions`` gives the placement of a replacement a set of
*penalty nodes*: the previous allocation's node when it failed there, and
every ``prev_node_id`` in its reschedule
tracker. The ``NodeReschedulingPenaltyIterator`` scores each penalty node
``-1`` (:data:`SCORE`), and the limit iterator skips up to ``MAX_SKIP``
nodes scoring below zero before it counts them against its limit, so a
replacement lands on a penalty node only when no other node fits among
the ones looked at.
"""

from __future__ import annotations

from drover.api.types.v1 import allocation_pb2

#: What a penalty node's score loses (Nomad's reschedule penalty scorer).
SCORE = 1.0
#: Penalised nodes the search passes over before counting them against its
#: limit (Nomad's ``maxSkip``).
MAX_SKIP = 3


def penalty_nodes(prev: allocation_pb2.Allocation) -> frozenset[str]:
    """The nodes a replacement of ``prev`` avoids (module doc)."""
    out = {e.prev_node_id for e in prev.reschedule_tracker.events if e.prev_node_id}
    if prev.node_id and prev.client_status == allocation_pb2.ALLOC_CLIENT_STATUS_FAILED:
        out.add(prev.node_id)
    return frozenset(out)

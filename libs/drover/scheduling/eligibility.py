"""Whether a node may take new allocations, and whether it has lost the
ones it holds: the one home of both rules (pure).

Nomad's: a node is schedulable when it is ready, not draining and not
marked ineligible. The worker's packer picks candidates with it, the state
service checks a plan's nodes at commit with it (naming the reason, in
Nomad's words) and unblocks evaluations when a node becomes schedulable.
A node in an :data:`UNRESPONSIVE` status has lost its allocations: the
worker stops them as lost, the state service refuses the node's reports.
"""

from __future__ import annotations

from drover.api.types.v1 import node_pb2

#: Nomad's plan-apply reasons for a node that may not take placements.
NOT_READY = "node is not ready for placements"
NOT_ELIGIBLE = "node is not eligible"

#: Nomad's ``Node.UnresponsiveStatus``.
UNRESPONSIVE = frozenset({node_pb2.NODE_STATUS_DOWN, node_pb2.NODE_STATUS_DISCONNECTED})

_READY = node_pb2.NODE_STATUS_READY
_INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE


def refusal(node: node_pb2.Node) -> str | None:
    """Why ``node`` may not take new allocations (:data:`NOT_READY`,
    :data:`NOT_ELIGIBLE`), or None when it may."""
    if node.status != _READY:
        return NOT_READY
    if node.drain or node.scheduling_eligibility == _INELIGIBLE:
        return NOT_ELIGIBLE
    return None


def schedulable(node: node_pb2.Node) -> bool:
    """``node`` may take new allocations (:func:`refusal` names no reason)."""
    return refusal(node) is None

"""Which client reports the state takes: Nomad's ``Node.UpdateAlloc`` rule.

A node in an unresponsive status (``down``, ``disconnected``) may not update
its allocations. When a node is marked down its allocations are marked
``lost`` and replaced; a client process that is in fact still running (the
node was marked down by hand, or missed heartbeats while alive) would
otherwise report the stop it then sees as ``complete``, and the allocation
that was lost with its node would read ``complete``. Its reports are
refused (FAILED_PRECONDITION, reason ``NODE_NOT_READY``) until the node is
ready again.

Read from the view, not compared in the txn: as in Nomad, where the check is
made by the endpoint before the raft apply. An allocation whose node the
state does not know (a test that writes allocations by hand) is not refused.
"""

from __future__ import annotations

from typing import Any

from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.scheduling.eligibility import UNRESPONSIVE
from drover.state.core import codec
from drover.state.core.view import View
from drover.state.errors import NodeNotReady

__all__ = ["refuse_unresponsive_node"]


def refuse_unresponsive_node(view: View, alloc: Any) -> None:
    """Raise :class:`NodeNotReady` if ``alloc``'s node may not report now."""
    if not alloc.node_id:
        return
    found = view.get(codec.NODES, codec.GLOBAL_NS, alloc.node_id)
    if found is None or found.obj.status not in UNRESPONSIVE:
        return
    status = node_pb2.NodeStatus.Name(found.obj.status).removeprefix("NODE_STATUS_").lower()
    raise NodeNotReady(
        f"node {alloc.node_id} is not allowed to update allocations while {status} "
        f"(allocation {alloc.id} is {_client_status(alloc)})",
        metadata={"node_id": alloc.node_id, "node_status": status, "allocation": alloc.id})


def _client_status(alloc: Any) -> str:
    return allocation_pb2.AllocClientStatus.Name(alloc.client_status).removeprefix(
        "ALLOC_CLIENT_STATUS_").lower()

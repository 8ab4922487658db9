"""Missed heartbeats (pure): which ready nodes have been silent too long.

Nomad's servers mark a node down when its heartbeat TTL passes; here the
reference worker does it (any number of workers may: marking a node down is
idempotent, and the state service writes it once). The node's allocations
are then lost and replaced (UpdateNodeStatus).
"""

from __future__ import annotations

from collections.abc import Iterable

from drover.api.types.v1 import node_pb2


def expired(nodes: Iterable[node_pb2.Node], now: float, ttl: float) -> list[str]:
    """Ready nodes whose last heartbeat is older than ``ttl`` seconds at ``now``
    (wall clock, seconds). Nodes that never heartbeat (no stamp) are left alone."""
    out = []
    for n in nodes:
        if n.status != node_pb2.NODE_STATUS_READY or not n.last_heartbeat.ByteSize():
            continue
        if now - n.last_heartbeat.ToNanoseconds() / 1e9 > ttl:
            out.append(n.id)
    return sorted(out)

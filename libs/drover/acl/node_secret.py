"""The node secret on the wire (Nomad's node SecretID), pure.

The state service issues a node its secret once, at registration
(``UpsertNodeResponse.secret_id``), and keeps only its SHA-256 (as token
secrets: :func:`drover.acl.tokens.hash_secret`). The node presents it as
metadata ``drover-node-secret`` on its own client calls (heartbeats,
allocation status updates, re-registration); the state service checks it
against the node the call is about (:mod:`drover.state.nodes.core.node_secret`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drover.acl.tokens import hash_secret

__all__ = ["NODE_SECRET", "node_secret_metadata", "presented_node_secret"]

NODE_SECRET = "drover-node-secret"


def node_secret_metadata(secret: str) -> tuple[tuple[str, str], ...]:
    """Call metadata presenting ``secret`` (none for an empty one)."""
    return ((NODE_SECRET, secret),) if secret else ()


def presented_node_secret(metadata: Iterable[tuple[str, Any]] | None) -> bytes | None:
    """The SHA-256 of the node secret a call presents; None: it presents none."""
    for key, value in metadata or ():
        if key == NODE_SECRET:
            return hash_secret(value if isinstance(value, str) else value.decode())
    return None

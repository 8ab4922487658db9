"""Client updates bound to the node that sends them (Nomad's node SecretID).

A node gets its secret once, when it first registers (UpsertNode answers
``secret_id``; the node record keeps only ``secret_sha256``). From then on:

- **re-registration** must present the node's secret (Nomad: "node secret
  ID does not match. Not registering node."); the record keeps its hash
  whatever the request's node says. A node registered before secrets
  existed gets one on its next registration;
- **a heartbeat** (UpdateNodeStatus ``heartbeat``) must present the secret
  of the node it names;
- **allocation client updates** (UpdateAllocations) must present the
  secret of the node every updated allocation runs on (Nomad's
  ``AuthorizeSameNode(identity, alloc.NodeID)``): one call speaks for one
  node.

Whether a secret *must* be presented is the shell's :class:`NodeProof`:
with ACLs on, every caller but the drover servers' own identity must (an
operator's drain, eligibility or down, and the worker's missed-heartbeat
down, need only ``node: write``); with ACLs off a call may omit it. A
secret that *is* presented is always checked: a wrong one is refused
(PERMISSION_DENIED ``NODE_SECRET_MISMATCH``) with or without ACLs.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from drover.api.types.v1 import node_pb2
from drover.state.errors import NodeSecretMismatch


@dataclass(frozen=True)
class NodeProof:
    """What a call proves about the node it speaks for: the SHA-256 of the
    secret it presents (None: none), and whether it had to present one."""

    presented: bytes | None = None
    required: bool = False


UNCHECKED = NodeProof()


def check_node(node: node_pb2.Node, proof: NodeProof, what: str) -> None:
    """Return when ``proof`` may speak for ``node``; else NodeSecretMismatch."""
    if proof.presented is None:
        if proof.required:
            raise NodeSecretMismatch(
                f"{what} needs node {node.id!r}'s own secret (metadata drover-node-secret, "
                "issued when it registered)", metadata={"node_id": node.id})
        return
    if not node.secret_sha256:
        raise NodeSecretMismatch(
            f"{what}: node {node.id!r} has no secret yet; register it again to get one",
            metadata={"node_id": node.id})
    if not hmac.compare_digest(proof.presented, node.secret_sha256):
        raise NodeSecretMismatch(
            f"{what}: the node secret presented is not node {node.id!r}'s",
            metadata={"node_id": node.id})


def registration_secret(old: node_pb2.Node | None, node: node_pb2.Node, proof: NodeProof,
                        new_secret: Callable[[], str]) -> str:
    """Set ``node.secret_sha256`` for an UpsertNode (module doc); the secret
    issued ("" when the node keeps the one it has)."""
    if old is None or not old.secret_sha256:
        secret = new_secret()
        node.secret_sha256 = hashlib.sha256(secret.encode()).digest()
        return secret
    if proof.presented is not None or proof.required:
        check_node(old, proof, "re-registering a node")
    node.secret_sha256 = old.secret_sha256
    return ""

"""Cluster secrets: random keys every replica of every service agrees on.

The first replica to ask creates the secret (a create-if-absent txn, so
concurrent first replicas cannot disagree); everyone then reads what won.
Used for the page-token key: a token signed by one replica (of any
service) verifies on every other, across restarts, and is not forgeable
with a key shipped in the source. Secrets live under
:meth:`Keyspace.secret` and are never rewritten; rotating one means
deleting it, which invalidates what it signed.
"""

from __future__ import annotations

import os
from typing import Any

from aetcd import rpc

from drover.coord import _kv
from drover.coord.keys import Keyspace

__all__ = ["SECRET_BYTES", "cluster_secret"]

SECRET_BYTES = 32


async def cluster_secret(client: Any, keyspace: Keyspace, name: str) -> bytes:
    """The secret ``name`` of this keyspace, created on first use."""
    key = keyspace.secret(name).encode()
    fresh = os.urandom(SECRET_BYTES)
    resp = await _kv.txn(client, rpc.TxnRequest(
        compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL,
                             create_revision=0)],
        success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=fresh))],
        failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
    ))
    if resp.succeeded:
        return fresh
    return bytes(resp.responses[0].response_range.kvs[0].value)

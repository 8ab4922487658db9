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
from typing import Protocol

from drover.coord.errors import EtcdUnavailable
from drover.coord.keys import Keyspace
from drover.coord.kv import Compare, Put, Ranges, Txns

__all__ = ["SECRET_BYTES", "SecretKV", "cluster_secret"]

SECRET_BYTES = 32

#: Create-or-read rounds before giving up (a secret deleted, i.e. rotated,
#: between our failed create and our read costs one more round).
_ROUNDS = 5


class SecretKV(Txns, Ranges, Protocol):
    """What agreeing on a secret needs."""


async def cluster_secret(kv: SecretKV, keyspace: Keyspace, name: str) -> bytes:
    """The secret ``name`` of this keyspace, created on first use."""
    key = keyspace.secret(name).encode()
    for _ in range(_ROUNDS):
        fresh = os.urandom(SECRET_BYTES)
        if (await kv.txn([Compare(key, "create", 0)], [Put(key, fresh)])).succeeded:
            return fresh
        page = await kv.range(key, b"")
        if page.kvs:
            return page.kvs[0].value
    raise EtcdUnavailable(f"cluster secret {name!r} kept vanishing while being read")

"""The parts every RPC group of the state servicer shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from drover.acl import IdentityKind, PermissionDenied
from drover.coord.fence import Fence
from drover.errors import FenceRequired
from drover.rpc.acl import current_identity
from drover.state import codec
from drover.state.cache import Cache
from drover.state.reads import Reader
from drover.state.writes import Writer, fence_from


class Base:
    def __init__(
        self, cache: Cache, reader: Reader, writer: Writer, keys: codec.KeyCodec,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.cache, self.reader, self.writer, self.keys = cache, reader, writer, keys
        self._wall = wall

    def now(self) -> Timestamp:
        ts = Timestamp()
        ts.FromNanoseconds(int(self._wall() * 1e9))
        return ts

    def fence(self, context: Any) -> Fence | None:
        return fence_from(context)

    def require_fence(self, context: Any, what: str) -> Fence:
        """The call's fence, which must name an election key of this keyspace.

        Leader-only writes (deployment outcomes, stable versions, broker
        outcomes) are refused without one: only a leader holds an election
        key, and the txn then proves it still holds it. A fence naming any
        other key (an object's, whose create_index a client can read) proves
        nothing and is refused as well.
        """
        fence = fence_from(context)
        if fence is None:
            raise FenceRequired(
                f"{what} may only be written by a leader: the call needs a "
                "drover-fence (leader key and term)", metadata={"field": "drover-fence"})
        if not fence.leader_key.startswith(f"{self.keys.base}election/"):
            raise FenceRequired(
                f"{what} needs a fence on an election key of this cluster",
                metadata={"field": "drover-fence"})
        identity = current_identity()  # None: ACLs off
        if identity is not None and identity.kind is not IdentityKind.SERVER:
            raise PermissionDenied(
                f"{what} may only be written by a drover server (its server identity); "
                f"{identity.describe} is not one", metadata={"capability": "server"})
        return fence

    def delete_page_limit(self) -> int:
        """Evaluations one DeleteEvaluations-by-filter call deletes (one txn):
        the configured cap less the revision marker's put, and room for the
        per-key compares of its fallback (each hit, the scheduler config and a
        fence: see :mod:`drover.state.evaluations`)."""
        return self.writer.max_txn_ops - 2

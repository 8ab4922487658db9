"""What every write RPC group of the state servicer uses around its plan:
the clock, the call's fence, the write context, and :meth:`WriteCalls.transact`
(every write goes through :func:`drover.state.transact.transact`).

One instance per servicer, handed to each write group in its constructor."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from drover.acl import IdentityKind, PermissionDenied
from drover.acl.node_secret import presented_node_secret
from drover.coord.fence import Fence
from drover.coord.kv import objects_per_txn
from drover.rpc.acl import current_identity
from drover.state.cache import Cache
from drover.state.core import codec, job_status, job_versions
from drover.state.core.node_secret import NodeProof
from drover.state.core.plan import WriteContext, WritePlan
from drover.state.core.rules import leader_fence
from drover.state.core.view import View
from drover.state.transact import ATTEMPTS, Planner, transact
from drover.state.writes import Writer, fence_from


@dataclass(frozen=True)
class Caller:
    """What a write call carries besides its request: its gRPC metadata
    (the ``drover-fence``, the node secret). Built by the servicer (the only
    module that sees a gRPC context); an empty one for calls from within."""

    metadata: tuple[tuple[str, Any], ...] = ()


class WriteCalls:
    def __init__(
        self, cache: Cache, writer: Writer, keys: codec.KeyCodec,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.cache, self.writer, self.keys = cache, writer, keys
        self._wall = wall

    def now(self) -> Timestamp:
        ts = Timestamp()
        ts.FromNanoseconds(int(self._wall() * 1e9))
        return ts

    @property
    def max_objects(self) -> int:
        """Objects one write request may carry here (:attr:`WriteContext.max_objects`)."""
        return objects_per_txn(self.writer.max_txn_ops)

    def write_context(self) -> WriteContext:
        """One clock reading for the call, random UUIDs for new objects, the
        txn size this replica was told, and the cache's tables told what the
        call's plans put (applied with no parse back; tables a re-list
        replaced meanwhile are told in vain, which costs only that parse)."""
        return WriteContext(self.keys, self.now(), lambda: str(uuid.uuid4()),
                            self.writer.max_txn_ops, on_put=self.cache.tables.expect_put)

    async def transact(self, planner: Planner, fence: Fence | None, *,
                       sync_first: bool = False, attempts: int = ATTEMPTS) -> Any:
        """Every write, each plan followed by the job versions it retires
        (:func:`drover.state.core.job_versions.prune`) and the job statuses
        and summaries it changes (:func:`drover.state.core.job_status.follow`)."""
        on_put, max_objects = self.cache.tables.expect_put, self.max_objects
        tracked = self.writer.config.job_tracked_versions

        def planned(view: View) -> WritePlan:
            plan = job_versions.prune(view, planner(view), self.keys, tracked, max_objects)
            return job_status.follow(view, plan, self.keys, on_put, max_objects)
        return await transact(self.cache, self.writer, planned, fence, sync_first=sync_first,
                              attempts=attempts)

    def fence(self, caller: Caller) -> Fence | None:
        return fence_from(caller.metadata)

    def node_proof(self, caller: Caller) -> NodeProof:
        """What the call proves about the node it speaks for: the node secret
        it presents, which it must with ACLs on unless it is a drover server
        (:mod:`drover.state.core.node_secret`)."""
        presented = presented_node_secret(caller.metadata)
        identity = current_identity()  # None: ACLs off
        return NodeProof(presented, identity is not None
                         and identity.kind is not IdentityKind.SERVER)

    def require_fence(self, caller: Caller, what: str) -> Fence:
        """The call's fence, which must name an election key of this keyspace
        (:func:`drover.state.core.rules.leader_fence`), from a drover server
        when ACLs are on."""
        fence = fence_from(caller.metadata)
        leader_fence(fence.leader_key if fence else None, self.keys.base, what)
        assert fence is not None
        identity = current_identity()  # None: ACLs off
        if identity is not None and identity.kind is not IdentityKind.SERVER:
            raise PermissionDenied(
                f"{what} may only be written by a drover server (its server identity); "
                f"{identity.describe} is not one", metadata={"capability": "server"})
        return fence

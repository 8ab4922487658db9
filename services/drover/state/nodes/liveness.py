"""Node heartbeats as etcd lease keepalives, and missed heartbeats marked
down (the design and the pure rules: :mod:`drover.state.nodes.core.liveness`).

:meth:`NodeLiveness.heartbeat` renews the node's lease when it has a live
one (no keyspace write) and otherwise grants a lease and records the node
alive in one txn. :meth:`NodeLiveness.reap` marks down, fenced, the
tracked ready nodes whose liveness key is gone: which keys exist it learns
from the state cache, whose watch carries their puts and their expiries
(:attr:`drover.state.core.tables.Tables.live`), and each mark-down compares
the key's absence in etcd, so a node that came alive meanwhile fails the
txn rather than going down.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from drover.coord.fence import Fence
from drover.coord.kv import LeaseKV, LeaseNotFound
from drover.errors import Conflict, NotFound
from drover.state.config import LivenessConfig
from drover.state.core import codec
from drover.state.core.plan import WritePlan
from drover.state.core.view import View
from drover.state.nodes.core.liveness import (
    heartbeat_ttl,
    keepalive_response,
    lease_seconds,
    lease_too_short,
    missed,
    plan_come_alive,
    plan_reap,
)
from drover.state.nodes.core.node_secret import UNCHECKED, NodeProof, check_node
from drover.state.pipeline import WriteCalls

log = logging.getLogger(__name__)

#: Attempts of a heartbeat racing another replica that brings the node alive.
ATTEMPTS = 3
#: Txns one ReapMissedHeartbeats call writes at most (the answer says how many are left).
REAP_TXNS = 16


class NodeLiveness:
    def __init__(self, writes: WriteCalls, leases: LeaseKV,
                 config: LivenessConfig,
                 rand: Callable[[], float] = random.random) -> None:
        self.writes, self.leases = writes, leases
        self.config = config
        self._rand = rand
        #: Keepalives and lease grants this replica made (metrics, tests).
        self.keepalives = 0
        self.grants = 0

    def _nodes(self) -> int:
        """The number of nodes the TTL rule scales with (every node this
        replica's cache holds: counting without decoding)."""
        return len(self.writes.cache.tables[codec.NODES])

    def _node(self, node_id: str) -> Any | None:
        return self.writes.cache.tables[codec.NODES].decode(f"{codec.GLOBAL_NS}/{node_id}")

    async def heartbeat(self, node_id: str, proof: NodeProof = UNCHECKED) -> Any:
        """One node's heartbeat: a lease keepalive, or (the lease gone) the
        node brought alive in one write. The node speaks only for itself:
        ``proof`` is checked against its secret
        (:mod:`drover.state.nodes.core.node_secret`)."""
        node = self._node(node_id)
        if node is None:
            await self.writes.cache.sync()
            node = self._node(node_id)
            if node is None:
                raise NotFound(f"node {node_id!r} not found", metadata={"id": node_id})
        check_node(node, proof, f"a heartbeat of node {node_id!r}")
        for _ in range(ATTEMPTS):
            if node.heartbeat_lease and not missed(node):
                try:
                    granted = await self.leases.lease_keepalive(node.heartbeat_lease)
                    self.keepalives += 1
                except LeaseNotFound:
                    granted = 0
                if granted and not lease_too_short(granted, self._nodes(), self.config):
                    return keepalive_response(self.writes.cache.revision, granted, self.config)
            resp = await self._come_alive(node_id, node.heartbeat_lease)
            if resp is not None:
                return resp
            await self.writes.cache.sync()  # another replica won: renew its lease
            node = self._node(node_id)
            if node is None:
                raise NotFound(f"node {node_id!r} not found", metadata={"id": node_id})
        raise Conflict(f"node {node_id!r} kept being brought alive by other replicas; retry")

    async def _come_alive(self, node_id: str, seen_lease: int) -> Any | None:
        ttl = heartbeat_ttl(self._nodes(), self.config, self._rand())
        lease = await self.leases.lease_grant(lease_seconds(ttl, self.config))
        self.grants += 1
        ctx = self.writes.write_context()
        try:
            resp = await self.writes.transact(
                lambda view: plan_come_alive(view, ctx, node_id, seen_lease, lease, ttl),
                None, sync_first=True)
        except BaseException:
            await self._revoke(lease)
            raise
        if not resp.HasField("heartbeat_ttl"):
            await self._revoke(lease)
            return None
        if seen_lease:
            await self._revoke(seen_lease)  # replaced (too short) or long gone
        return resp

    async def _revoke(self, lease: int) -> None:
        try:
            await self.leases.lease_revoke(lease)
        except Exception as e:  # an orphaned lease only expires, holding no key
            log.debug("revoking lease %x: %s", lease, e)

    def _reaper(self) -> Callable[[View], WritePlan]:
        """The reap plan, on the live nodes as the cache holds them when the
        plan is made (the same cache state as its view: the liveness keys
        come down the cache's own watch, so no read of every key per check)."""
        ctx, cache = self.writes.write_context(), self.writes.cache
        return lambda view: plan_reap(view, ctx, set(cache.tables.live))

    async def reap(self, fence: Fence) -> Any:
        """Mark down the tracked ready nodes whose liveness key is gone, in
        at most :data:`REAP_TXNS` txns; the merged answer."""
        total: Any = None
        for _ in range(REAP_TXNS):
            # The cache as of now: every liveness key that expired by this
            # revision has come down its watch (etcd deletes expired keys itself).
            revision = await self.writes.cache.store.revision()
            await self.writes.cache.wait_for_revision(revision, within=5.0)
            try:
                resp = await self.writes.transact(self._reaper(), fence)
            except Conflict:
                continue  # a node came alive meanwhile: plan again on the cache
            if total is None:
                total = resp
            else:
                total.index = resp.index
                total.node_ids.extend(resp.node_ids)
                total.eval_ids.extend(resp.eval_ids)
                total.lost += resp.lost
                total.remaining = resp.remaining
            if not resp.remaining:
                break
        if total is None:
            raise Conflict("silent nodes kept coming alive while being marked down; retry")
        return total

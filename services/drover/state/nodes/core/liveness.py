"""Node liveness without writes: the design, the TTL rule, the pure decisions.

Design (issue 31)
-----------------
A node's heartbeat costs etcd no write to the keyspace; only status changes
(ready -> down, down -> ready, and a node starting to heartbeat) are written.

Two designs were weighed:

(a) **One etcd lease per node.** When a node comes alive (its first
    heartbeat, or one after its lease expired) the state replica that takes
    the heartbeat grants a lease of ``TTL + heartbeat_grace`` seconds and, in
    the txn that records the node alive (``heartbeat_lease``,
    ``last_heartbeat``, ready again if it had been marked down for missed
    heartbeats), puts the node's *liveness key* ``<root>/v1/liveness/-/<id>``
    attached to that lease. Every later heartbeat is a lease keepalive:
    etcd resets the lease's countdown, no key changes, the revision does
    not move. A node that stops heartbeating has its lease expire; etcd
    deletes the liveness key. The broker leader (elected, fenced) asks the
    state service every ``heartbeat_check_interval`` to mark down every
    ready node whose liveness key is gone (``ReapMissedHeartbeats``), each
    in a txn compared on that key still being absent. Which keys exist the
    state service knows from its cache: their puts and expiries come down
    its watch (:attr:`drover.state.core.tables.Tables.live`), so a check
    reads only etcd's revision, not every key.
(b) **Nomad's.** TTL timers held in the elected leader's memory, every
    heartbeat routed to that leader, expiry marks the node down; a new
    leader knows nothing, so it gives every node a fresh, long TTL
    (``failover_heartbeat_ttl``, 5 min) to avoid marking live nodes down.

(a) is chosen. etcd already is drover's lock and clock: lease expiry is
decided by etcd's leader, survives a drover failover untouched (and etcd
extends every lease on its own leader change), and is visible to any
replica as a key that is there or not. So detection needs no memory in the
elected service: a new broker leader only *reconciles* (ready node, liveness
key gone -> down) and cannot mark a live node down, because the txn that
marks it down compares the key's absence -- a node heartbeating at that
moment holds its key. Nor does a failover blind detection for 5 minutes as
(b) would. Heartbeats go to any state replica (no leader hop), and a
keepalive is not a Raft write to the keyspace (no revision, no watch
event, no cache or Subscribe traffic). Why the broker leader and not the
deployment watcher's: marking a node down *creates evaluations* (one
``node-update`` per affected job), which is the broker's business, and
Nomad's heartbeat timers live on the leader beside its eval broker; the
issue's failover target names the broker leader too.

The TTL rule is Nomad's (``nomad/heartbeat.go``): ``ttl =
max(min_heartbeat_ttl, nodes / max_heartbeats_per_second)`` plus a random
stagger in ``[0, ttl)``; the node is told ``ttl`` (without the grace) in
every heartbeat's answer and sends its next heartbeat within it; etcd
expires the lease ``ttl + heartbeat_grace`` after the last keepalive. A
lease's TTL is fixed when granted (a keepalive renews it to the granted
TTL), so the answer of a keepalive tells the node the TTL its lease was
granted with, and a lease granted when the cluster was much smaller (its
TTL below what the rule now asks without stagger) is replaced at the next
heartbeat -- one write per node per doubling of the cluster. Nodes that
never heartbeat (registered by hand) are not tracked (``heartbeat_lease``
0), as before.

A node marked down for missed heartbeats gets ``status_description``
:data:`HEARTBEAT_MISSED`; its next heartbeat brings it alive and ready
again (and unblocks blocked evaluations, the node-join path). A node an
operator marked down stays down: a heartbeat never undoes that.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import node_pb2
from drover.scheduling.eligibility import schedulable
from drover.state.config import LivenessConfig
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan, no_write
from drover.state.core.rules import existing
from drover.state.core.view import View
from drover.state.evaluations.core.unblock import room_on, unblock_where
from drover.state.jobs.core import system_jobs
from drover.state.nodes.core.nodes import mark_lost

#: The key segment of liveness keys (not an object kind; its home is the codec).
LIVENESS = codec.LIVENESS
#: Nomad's node event and status description for a node marked down by its TTL.
HEARTBEAT_MISSED = "Node heartbeat missed"

_READY = node_pb2.NODE_STATUS_READY
_DOWN = node_pb2.NODE_STATUS_DOWN


def rate_scaled_ttl(nodes: int, config: LivenessConfig) -> float:
    """Nomad's ``RateScaledInterval``: the TTL that keeps ``nodes`` heartbeats
    within ``max_heartbeats_per_second``, never below ``min_heartbeat_ttl``."""
    return max(config.min_heartbeat_ttl, nodes / config.max_heartbeats_per_second)


def heartbeat_ttl(nodes: int, config: LivenessConfig, rand: float) -> float:
    """The TTL a node is told: the rate-scaled TTL plus Nomad's random stagger
    (``rand`` in [0, 1) times the TTL), so nodes that came alive together
    do not heartbeat together."""
    ttl = rate_scaled_ttl(nodes, config)
    return ttl + ttl * rand


def lease_seconds(ttl: float, config: LivenessConfig) -> int:
    """The lease granted for ``ttl``: whole seconds (etcd's unit), the grace
    included, so etcd expires it no earlier than TTL + grace after the
    last keepalive."""
    return math.ceil(ttl + config.heartbeat_grace)


def told_ttl(granted: int, config: LivenessConfig) -> float:
    """The TTL a node is told while it renews a lease granted ``granted``
    seconds: whatever keeps its next keepalive inside the lease, less the grace."""
    return max(float(granted) - config.heartbeat_grace, 1.0)


def lease_too_short(granted: int, nodes: int, config: LivenessConfig) -> bool:
    """The cluster grew so much that a lease of ``granted`` seconds makes its
    node heartbeat more often than the rule allows: replace it (a write)."""
    return told_ttl(granted, config) < rate_scaled_ttl(nodes, config)


def missed(node: node_pb2.Node) -> bool:
    """Marked down by the control plane for missed heartbeats (not an operator's down)."""
    return node.status == _DOWN and node.status_description == HEARTBEAT_MISSED


def liveness_key(keys: codec.KeyCodec, node_id: str) -> bytes:
    return keys.key(LIVENESS, codec.GLOBAL_NS, node_id)


def _heartbeat_response(rev: int, ttl: float, unblocked: int = 0) -> Any:
    resp = state_pb2.UpdateNodeStatusResponse(index=rev, unblocked=unblocked)
    resp.heartbeat_ttl.FromMilliseconds(int(ttl * 1000))
    return resp


def keepalive_response(rev: int, granted: int, config: LivenessConfig) -> Any:
    """The answer to a heartbeat that only renewed the node's lease."""
    return _heartbeat_response(rev, told_ttl(granted, config))


def plan_come_alive(view: View, ctx: WriteContext, node_id: str, seen_lease: int,
                    lease: int, ttl: float) -> WritePlan:
    """Record ``node_id`` alive on the new ``lease`` (granted for ``ttl``):
    its liveness key attached to it and the node's ``heartbeat_lease``, in
    one txn compared on the node; ready again if it was marked down for
    missed heartbeats (unblocking blocked evaluations, as a node joining).

    ``seen_lease`` is the node's lease when the caller decided it needs a
    new one: if another replica brought the node alive meanwhile, nothing
    is written and the answer has no ``heartbeat_ttl`` (the caller renews
    that lease instead and gives its own back)."""
    found = existing(view, codec.NODES, codec.GLOBAL_NS, node_id, "node")
    node = found.obj
    if node.heartbeat_lease != seen_lease:
        return no_write(lambda rev: state_pb2.UpdateNodeStatusResponse(index=rev))
    before = schedulable(node)
    node.heartbeat_lease = lease
    node.last_heartbeat.CopyFrom(ctx.now)
    if missed(node):
        node.status = _READY
        node.status_description = ""
        node.status_updated_at.CopyFrom(ctx.now)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.put(codec.NODES, codec.GLOBAL_NS, node_id, node, found.mod)
    plan.put_leased(liveness_key(ctx.keys, node_id), node_id.encode(), lease, LIVENESS)
    unblocked = 0
    if schedulable(node) and not before:
        # Back to ready: as a node that becomes schedulable (core.nodes).
        system_jobs.evaluate(view, ctx, plan, node, ctx.max_objects - len(plan.ops))
        unblocked = unblock_where(view, ctx, plan, [room_on(view, node)],
                                  ctx.max_objects - len(plan.ops))
    return plan.build(lambda rev: _heartbeat_response(rev, ttl, unblocked))


def silent_candidates(ready_ids: Iterable[str], live: set[str]) -> list[str]:
    """Ready nodes (ids) without a liveness key: the only ones worth decoding."""
    return sorted(i for i in ready_ids if i not in live)


def _room_needed(view: View, node_id: str) -> int:
    """An upper bound on the ops (and compares) marking ``node_id`` down takes:
    the node, its key's compare, and per allocation one put, at most one
    evaluation and at most one job status write (each of a job of its own)."""
    allocs = sum(1 for _ in view.ids(codec.ALLOCATIONS, "node_id", node_id))
    return 2 + 3 * allocs


def plan_reap(view: View, ctx: WriteContext, live: set[str]) -> WritePlan:
    """Mark down, in one txn, as many tracked ready nodes without a liveness
    key as fit: each with ``status_description`` :data:`HEARTBEAT_MISSED`,
    compared on its liveness key being absent (a node that came alive since
    ``live`` was read fails the txn rather than going down), its live
    allocations lost and a ``node-update`` evaluation per affected job.

    The answer's ``remaining`` counts the silent nodes left for the next txn."""
    nsids = (nsid.partition("/")[2] for nsid in view.ids(codec.NODES, "status", "ready"))
    candidates = silent_candidates(nsids, live)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    down: list[str] = []
    lost, eval_ids, remaining = 0, [], 0
    owed: set[tuple[str, str]] = set()  # jobs whose status write the plan owes
    for node_id in candidates:
        found = view.get(codec.NODES, codec.GLOBAL_NS, node_id)
        if found is None or found.obj.status != _READY or not found.obj.heartbeat_lease:
            continue  # never heartbeat: not tracked
        room = min(ctx.max_objects - len(plan.ops) - len(owed),
                   ctx.max_compares - 1 - len(plan.compares))
        if down and _room_needed(view, node_id) > room:
            remaining += 1
            continue
        node = found.obj
        node.status = _DOWN
        node.status_description = HEARTBEAT_MISSED
        node.status_updated_at.CopyFrom(ctx.now)
        plan.compare(liveness_key(ctx.keys, node_id), "create", 0)
        plan.put(codec.NODES, codec.GLOBAL_NS, node_id, node, found.mod)
        n, ids = mark_lost(view, ctx, plan, node_id, "node is down", owed)
        lost += n
        eval_ids += ids
        down.append(node_id)
    return plan.build(lambda rev: state_pb2.ReapMissedHeartbeatsResponse(
        index=rev, node_ids=down, lost=lost, eval_ids=eval_ids, remaining=remaining),
        retry=False, conflict="a silent node came alive while it was being marked down")

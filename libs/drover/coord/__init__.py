"""Coordination on etcd: sessions, election, fencing, leadership, membership,
watches. The public surface is pinned in ``__all__``; see each module's
docstring for its guarantees.

Every component runs on a small typed Protocol of :mod:`drover.coord.kv`
(the one etcd layer): :class:`EtcdKV` over a connected client, or
:class:`~drover.coord.memkv.MemoryKV` in tests. Open two clients
(:func:`connect`): ``purpose="control"`` for sessions, elections and
membership, ``purpose="bulk"`` for :class:`ResilientWatch`.
"""

from drover.coord.clock import Clock, monotonic
from drover.coord.connect import EtcdClient, connect
from drover.coord.decide import Action, decide
from drover.coord.election import Election, LeaderInfo, observe, observe_changes
from drover.coord.errors import (
    EstablishFailed,
    EtcdOutcomeUnknown,
    EtcdUnavailable,
    FenceLost,
    InvalidFence,
    InvalidMember,
    NotCandidate,
    SessionLost,
    WatchCompacted,
)
from drover.coord.etcd_kv import EtcdKV
from drover.coord.fence import (
    FENCE_METADATA,
    Fence,
    fence_compare,
    fenced_txn,
    parse_fence,
)
from drover.coord.guard import LeaderGuard
from drover.coord.keys import Keyspace
from drover.coord.latest import Latest, LatestChannel, Seen
from drover.coord.leadership import Leadership, LeadershipConfig
from drover.coord.membership import (
    Member,
    MemberList,
    Registration,
    list_members,
    watch_members,
)
from drover.coord.secret import cluster_secret
from drover.coord.session import DEFAULT_TTL, LeaseClock, Session
from drover.coord.term import LeaderComponent, LeaseView, Term, TermScope
from drover.coord.watch import ResilientWatch, WatchConfig, WatchHealth
from drover.coord.watch_buffer import (
    Batch,
    EventType,
    KeyValue,
    Resync,
    WatchBuffer,
    WatchEvent,
    WatchMessage,
)

__all__ = [
    "DEFAULT_TTL",
    "FENCE_METADATA",
    "Action",
    "Batch",
    "Clock",
    "Election",
    "EstablishFailed",
    "EtcdClient",
    "EtcdKV",
    "EtcdOutcomeUnknown",
    "EtcdUnavailable",
    "EventType",
    "Fence",
    "FenceLost",
    "InvalidFence",
    "InvalidMember",
    "KeyValue",
    "Keyspace",
    "Latest",
    "LatestChannel",
    "LeaderComponent",
    "LeaderGuard",
    "LeaderInfo",
    "Leadership",
    "LeadershipConfig",
    "LeaseClock",
    "LeaseView",
    "Member",
    "MemberList",
    "NotCandidate",
    "Registration",
    "ResilientWatch",
    "Resync",
    "Seen",
    "Session",
    "SessionLost",
    "Term",
    "TermScope",
    "WatchBuffer",
    "WatchCompacted",
    "WatchConfig",
    "WatchEvent",
    "WatchHealth",
    "WatchMessage",
    "cluster_secret",
    "connect",
    "decide",
    "fence_compare",
    "fenced_txn",
    "list_members",
    "monotonic",
    "observe",
    "observe_changes",
    "parse_fence",
    "watch_members",
]

"""Membership: who is alive, where it listens, what it has applied.

Each replica keeps ``<root>/v1/members/<service>/<replica>`` = JSON of a
:class:`Member`, bound to its own session lease: when the replica dies (or
is paused past its TTL), etcd deletes the entry, no reaper needed.

``set_applied_revision`` is called on every applied change by busy replicas
(the proxy's convergence barrier reads it), so it only records the newest
value; a background writer puts it at most once per ``flush_interval``
(coalescing, never blocking the caller). A lost session is replaced and the
entry re-registered; the entry is therefore present whenever the replica
can reach etcd, and absent within one TTL after it cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Iterable
from dataclasses import asdict, dataclass, replace
from typing import Protocol

from drover.coord.deadline import caller_deadline
from drover.coord.errors import EtcdUnavailable, InvalidMember, LeaseNotFound
from drover.coord.keys import Keyspace
from drover.coord.kv import KV, Compare, Delete, Leases, Put, Ranges, Txns, prefix_end
from drover.coord.latest import LatestChannel
from drover.coord.session import Session
from drover.coord.watch import ResilientWatch, WatchConfig, WatchKV
from drover.coord.watch_buffer import EventType, KeyValue, Resync
from drover.tasks import cancel_and_wait

__all__ = [
    "Member",
    "MemberList",
    "Registration",
    "RegistrationKV",
    "list_members",
    "watch_members",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Member:
    service: str
    replica: str
    address: str
    rpc_version: int
    applied_revision: int = 0
    started_at: float = 0.0  # unix seconds

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Member:
        try:
            d = json.loads(raw)
            return cls(service=str(d["service"]), replica=str(d["replica"]),
                       address=str(d["address"]), rpc_version=int(d["rpc_version"]),
                       applied_revision=int(d.get("applied_revision", 0)),
                       started_at=float(d.get("started_at", 0.0)))
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidMember(f"bad membership record: {e!r}") from e


@dataclass(frozen=True)
class MemberList:
    members: tuple[Member, ...]
    revision: int  # etcd revision this list is current at


class RegistrationKV(Txns, Leases, Protocol):
    """What keeping a membership entry needs: a session and puts under it."""


def _decode(items: Iterable[KV | KeyValue]) -> dict[bytes, Member]:
    out: dict[bytes, Member] = {}
    for kv in items:
        try:
            out[kv.key] = Member.from_json(kv.value)
        except InvalidMember as e:
            log.warning("skipping membership key %r: %s", kv.key, e)
    return out


def _as_list(members: dict[bytes, Member], revision: int) -> MemberList:
    return MemberList(tuple(members[k] for k in sorted(members)), revision)


async def list_members(kv: Ranges, keyspace: Keyspace, service: str) -> MemberList:
    prefix = keyspace.members_prefix(service).encode()
    with caller_deadline(5.0):  # retried on another member within it
        page = await kv.range(prefix, prefix_end(prefix))
    return _as_list(_decode(page.kvs), page.revision)


async def watch_members(kv: WatchKV, keyspace: Keyspace, service: str, *,
                        config: WatchConfig | None = None) -> AsyncGenerator[MemberList, None]:
    """Yield the full member list now and after every etcd revision that
    changed it. Resilient like :class:`ResilientWatch`; ``aclose()`` ends its
    watch at once (a generator: the type says so, so a caller may close it).

    One list per revision, never one per delivery: a watcher that received
    two revisions in one delivery must still attribute each change to its
    own revision, as every other watcher does (the proxy's convergence
    barrier compares these revisions across replicas).
    """
    prefix = keyspace.members_prefix(service).encode()
    members: dict[bytes, Member] = {}
    async with ResilientWatch(kv, prefix, config=config) as watch:
        while True:
            for msg in await watch.get():
                if isinstance(msg, Resync):
                    members = _decode(msg.items)
                else:
                    for ev in msg.events:
                        if ev.type is EventType.DELETE:
                            members.pop(ev.kv.key, None)
                        else:
                            members.update(_decode([ev.kv]))
                yield _as_list(members, msg.revision)


class Registration:
    """Keeps this replica's membership entry alive. Run :meth:`run` as a task."""

    def __init__(self, kv: RegistrationKV, keyspace: Keyspace, member: Member, *,
                 ttl: int = 10, flush_interval: float = 0.5, retry_backoff: float = 0.5) -> None:
        self.kv = kv
        self.key = keyspace.member(member.service, member.replica).encode()
        self.ttl = ttl
        self.flush_interval = flush_interval
        self.retry_backoff = retry_backoff
        self.registered = asyncio.Event()
        self._applied: LatestChannel[int] = LatestChannel(member.applied_revision)
        self._member = member
        self._session: Session | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def member(self) -> Member:
        return replace(self._member, applied_revision=self._applied.value)

    def alive(self, now: float | None = None) -> bool:
        """Registered under a lease that is provably alive at ``now`` (monotonic):
        etcd answered a keepalive recently enough. Readiness uses it."""
        session = self._session
        if session is None or not self.registered.is_set() or session.lost.is_set():
            return False
        return (time.monotonic() if now is None else now) < session.act_until

    def set_applied_revision(self, revision: int) -> None:
        """Record the newest applied revision; written soon. Never blocks."""
        if revision > self._applied.value:
            self._applied.publish(revision)

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(), name=f"membership-{self._member.replica}")
        return self._task

    async def close(self, grace: float = 1.0) -> None:
        """Stop, delete the entry and revoke the lease: each step bounded by
        ``grace`` (a task that ignores its cancel is logged and left)."""
        await cancel_and_wait((self._task,), within=grace,
                              what=f"membership {self._member.replica} close")
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(EtcdUnavailable), caller_deadline(grace):
                # only our own entry: one a newer session of ours put stays
                await self.kv.txn([Compare(self.key, "lease", session.lease_id)],
                                  [Delete(self.key)])
            await session.close(grace=grace)

    async def _put(self, session: Session) -> None:
        with caller_deadline(5.0):
            await self.kv.txn([], [Put(self.key, self.member.to_json(),
                                       lease=session.lease_id)])

    async def run(self) -> None:
        while True:
            try:
                session = await Session.open(self.kv, self.ttl)
            except EtcdUnavailable as e:
                log.warning("membership %s: no session: %s", self._member.replica, e)
                await asyncio.sleep(self.retry_backoff)
                continue
            self._session = session
            try:
                await self._keep(session)
            except (EtcdUnavailable, LeaseNotFound) as e:
                log.warning("membership %s: %s; re-registering", self._member.replica, e)
            finally:
                self.registered.clear()
                if self._session is session:
                    self._session = None
                    await session.close()
            await asyncio.sleep(self.retry_backoff)

    async def _keep(self, session: Session) -> None:
        seen = self._applied.version
        await self._put(session)
        self.registered.set()
        while not session.lost.is_set():
            changed = asyncio.ensure_future(self._applied.wait_newer(seen))
            lost = asyncio.ensure_future(session.lost.wait())
            try:
                await asyncio.wait({changed, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
                lost.cancel()
            if session.lost.is_set():
                return
            seen = self._applied.version
            await self._put(session)
            await asyncio.sleep(self.flush_interval)  # coalesce bursts of updates




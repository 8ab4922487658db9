"""Leader election on etcd (etcd's concurrency recipe, with its holes closed).

Each candidate puts ``<root>/v1/election/<service>/<lease-hex>`` bound to its
session lease, value = its advertised address. The key with the lowest
create_revision leads; every other candidate waits for the deletion of the
key just before its own (no thundering herd), then re-reads.

Holes closed here:

* phantom leadership: etcd's recipe only watches the predecessor, so a
  candidate whose own key expired while waiting still "wins" when the
  predecessor goes. Here the wait also watches our own key, and every
  decision starts with a linearizable read that must show our key, lowest.
* hung watches: the wait also wakes every ``recheck`` seconds and re-reads,
  so a watch stream that stalls silently delays a failover by at most that.
* the term: a win is confirmed at a revision (``won_at_revision``) and is
  identified by the key's create_revision (the fence, :mod:`.fence`).

:func:`observe` and :func:`observe_changes` give any process the current
leader (address and term) without campaigning.

Everything here runs on the small typed :class:`ElectionKV` (the one etcd
layer, :class:`~drover.coord.etcd_kv.EtcdKV`, or
:class:`~drover.coord.memkv.MemoryKV` in tests); every read and write is
bounded by the caller-deadline scope it opens (:mod:`.deadline`).

Established: the key's value is the leader's address; once the leader has
established (its components restored and serving), :meth:`Election.mark_established`
rewrites it as ``<address>\nestablished`` (compared on the term, under the
same lease, so it never recreates a vanished key). :class:`LeaderInfo`
says which, so replicas advertise (``drover-leader`` hints) only a leader
that serves, and clients are not sent to one still restoring its state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from drover.coord.deadline import caller_deadline
from drover.coord.errors import (
    Compacted,
    EtcdUnavailable,
    LeaseNotFound,
    NotCandidate,
    SessionLost,
)
from drover.coord.keys import Keyspace
from drover.coord.kv import KV, Compare, Delete, Put, Ranges, Txns, Watches, prefix_end
from drover.coord.session import Session
from drover.coord.term import Term
from drover.tasks import cancel_and_wait

__all__ = ["Election", "ElectionKV", "LeaderInfo", "observe", "observe_changes"]

log = logging.getLogger(__name__)


class ElectionKV(Ranges, Txns, Watches, Protocol):
    """What a candidacy needs of etcd (its lease is its :class:`Session`'s)."""


@dataclass(frozen=True)
class LeaderInfo:
    """Who leads ``service``: address, term (create_revision) and key."""

    service: str
    address: str
    term: int
    leader_key: str
    revision: int  # etcd revision of the read that saw it
    #: The leader has established (serves leader-only calls).
    established: bool = False


_ESTABLISHED = "\nestablished"


def _leader_info(service: str, kv: KV, revision: int) -> LeaderInfo:
    value = kv.value.decode()
    address, established = value.removesuffix(_ESTABLISHED), value.endswith(_ESTABLISHED)
    return LeaderInfo(service, address, kv.create_revision, kv.key.decode(), revision,
                      established)


def _by_creation(kvs: list[KV]) -> list[KV]:
    """Candidates in election order (lowest create_revision leads). The
    election prefix holds one key per candidate: sorting here is cheap."""
    return sorted(kvs, key=lambda kv: kv.create_revision)


async def _candidates(kv: Ranges, prefix: bytes, bound: float) -> tuple[list[KV], int]:
    """Every candidate, in election order, and the revision of the read
    (linearizable; retried on another member within ``bound`` seconds)."""
    with caller_deadline(bound):
        page = await kv.range(prefix, prefix_end(prefix))
    return _by_creation(page.kvs), page.revision


async def _until_deleted(kv: Watches, key: bytes, range_end: bytes, start_revision: int,
                         keys: set[bytes]) -> bool:
    """Watch from ``start_revision``; True once one of ``keys`` is deleted,
    False if the watch ends first. Raises what the watch raises
    (:class:`Compacted`, :class:`EtcdUnavailable`). Bound it by the caller's
    timeout: opening the watch waits for etcd too."""
    watch = await kv.watch(key, range_end, start_revision)
    try:
        async for batch in watch:
            if any(ev.deleted and ev.kv.key in keys for ev in batch.events):
                return True
        return False
    finally:
        await watch.close()


class Election:
    """One candidacy of one session in the election of ``service``."""

    def __init__(self, kv: ElectionKV, keyspace: Keyspace, service: str, session: Session, *,
                 address: str, recheck: float | None = None, timeout: float = 5.0) -> None:
        self.kv = kv
        self.keyspace = keyspace
        self.service = service
        self.session = session
        self.address = address
        self.prefix = keyspace.election_prefix(service)
        self.key = self.prefix + session.lease_hex
        self.recheck = recheck if recheck is not None else max(1.0, session.ttl / 2)
        self.timeout = timeout
        self.create_revision = 0

    async def campaign(self) -> Term:
        """Block until this candidate leads; return the confirmed term.

        Raises :class:`SessionLost` when the session goes and
        :class:`NotCandidate` when our key vanished (never a phantom win).
        """
        await self._ensure_key()
        prefix, key = self.prefix.encode(), self.key.encode()
        while True:
            self.session.check()
            kvs, revision = await _candidates(self.kv, prefix, self.timeout)
            self.session.check()
            mine = [kv for kv in kvs if kv.key == key]
            if not mine or mine[0].create_revision != self.create_revision:
                raise NotCandidate(f"election key {self.key} vanished while campaigning")
            if kvs[0].key == key:
                return Term(self.service, self.key, self.create_revision, revision,
                            self.address)
            before = [kv for kv in kvs if kv.create_revision < self.create_revision]
            predecessor = before[-1].key
            await self._wait_deleted({predecessor, key}, revision + 1)

    async def _ensure_key(self) -> None:
        key = self.key.encode()
        with caller_deadline(self.timeout):
            try:
                res = await self.kv.txn(
                    [Compare(key, "create", 0)],
                    [Put(key, self.address.encode(), lease=self.session.lease_id)])
            except LeaseNotFound as e:
                raise SessionLost(f"session {self.session.lease_hex} lost: its lease "
                                  "is gone") from e
            if res.succeeded:
                self.create_revision = res.revision
                return
            # Already there: ours (the key names our lease), from an earlier campaign.
            page = await self.kv.range(key, b"")
        if not page.kvs:
            raise NotCandidate(f"election key {self.key} vanished while campaigning")
        self.create_revision = page.kvs[0].create_revision

    async def _wait_deleted(self, keys: set[bytes], start_revision: int) -> None:
        """Return when one of ``keys`` is deleted, the session is unsafe, or
        ``recheck`` seconds pass (the caller re-reads in every case)."""
        prefix = self.prefix.encode()
        lost = asyncio.ensure_future(self.session.unsafe.wait())
        waiter = asyncio.ensure_future(
            _until_deleted(self.kv, prefix, prefix_end(prefix), start_revision, keys))
        try:
            await asyncio.wait({waiter, lost}, timeout=self.recheck,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            # Bounded (a watch stuck on its cancel must not hold the campaign).
            await cancel_and_wait((waiter,), within=self.timeout,
                                  what=f"election watch for {self.key}")
        err = waiter.exception() if waiter.done() and not waiter.cancelled() else None
        if isinstance(err, (EtcdUnavailable, Compacted)):
            log.info("election watch for %s failed, re-reading: %r", self.key, err)
            await asyncio.sleep(0.1)
        elif err is not None:
            raise err

    async def wait_key_gone(self, term: Term) -> str:
        """While leading: return (a reason) once our key is deleted or replaced.
        Also re-reads every ``recheck`` seconds in case the watch hung."""
        key = self.key.encode()
        start = term.won_at_revision + 1
        while True:
            try:
                with caller_deadline(self.timeout):
                    page = await self.kv.range(key, b"")
            except EtcdUnavailable as e:
                # The session guards against a long outage; here just retry.
                log.info("leader key check for %s failed: %s", self.key, e)
                await asyncio.sleep(min(1.0, self.recheck))
                continue
            if not page.kvs or page.kvs[0].create_revision != term.revision:
                return f"election key {self.key} is gone"
            start = max(start, page.revision + 1)
            try:
                async with asyncio.timeout(self.recheck):
                    if await _until_deleted(self.kv, key, b"", start, {key}):
                        return f"election key {self.key} was deleted"
            except TimeoutError:
                pass
            except (EtcdUnavailable, Compacted) as e:
                log.info("leader key watch for %s failed, re-reading: %r", self.key, e)
                await asyncio.sleep(0.1)

    async def mark_established(self, term: Term, *, rpc_timeout: float = 5.0) -> bool:
        """Advertise that the leader of ``term`` serves (see module doc).
        False if the key is no longer ours (nothing written)."""
        key = self.key.encode()
        try:
            with caller_deadline(rpc_timeout):
                res = await self.kv.txn(
                    [Compare(key, "create", term.revision)],
                    [Put(key, (self.address + _ESTABLISHED).encode(),
                         lease=self.session.lease_id)])
        except LeaseNotFound:
            return False  # the lease is gone, and the key with it
        return res.succeeded

    async def resign(self, term: Term | None = None, *, rpc_timeout: float = 1.0) -> bool:
        """Delete our key if it is still ours (same create_revision). Bounded."""
        key = self.key.encode()
        rev = term.revision if term is not None else self.create_revision
        if rev <= 0:
            return False
        try:
            with caller_deadline(rpc_timeout):
                res = await self.kv.txn([Compare(key, "create", rev)], [Delete(key)])
        except EtcdUnavailable as e:
            log.info("resign of %s failed (the lease will expire it): %s", self.key, e)
            return False
        return res.succeeded


async def _read_leader(kv: Ranges, keyspace: Keyspace, service: str,
                       bound: float) -> tuple[LeaderInfo | None, int]:
    kvs, revision = await _candidates(kv, keyspace.election_prefix(service).encode(), bound)
    return (_leader_info(service, kvs[0], revision) if kvs else None), revision


async def observe(kv: Ranges, keyspace: Keyspace, service: str, *,
                  rpc_timeout: float = 5.0) -> LeaderInfo | None:
    """The current leader of ``service`` (linearizable read), or None."""
    info, _ = await _read_leader(kv, keyspace, service, rpc_timeout)
    return info


class ObserveKV(Ranges, Watches, Protocol):
    """What following an election needs."""


async def observe_changes(kv: ObserveKV, keyspace: Keyspace, service: str, *,
                          recheck: float = 5.0) -> AsyncIterator[LeaderInfo | None]:
    """Yield the leader now, then on every change (None: no leader).

    Re-reads on every event in the election prefix and every ``recheck``
    seconds; survives etcd errors by retrying (it never raises
    :class:`EtcdUnavailable`, it just yields nothing new meanwhile).
    """
    prefix = keyspace.election_prefix(service).encode()
    last: tuple[str, int, bool] | bool | None = False  # False: nothing yielded yet
    while True:
        try:
            info, revision = await _read_leader(kv, keyspace, service, 5.0)
            ident = (info.address, info.term, info.established) if info else None
            if ident != last:
                last = ident
                yield info
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(recheck):
                    watch = await kv.watch(prefix, prefix_end(prefix), revision + 1)
                    try:
                        async for batch in watch:
                            if batch.events:
                                break
                    finally:
                        await watch.close()
        except (EtcdUnavailable, Compacted) as e:
            log.info("observing %s leader: %r; retrying", service, e)
            await asyncio.sleep(0.2)

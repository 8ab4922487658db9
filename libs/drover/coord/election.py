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
from typing import Any

from aetcd import rpc

from drover.coord import _kv
from drover.coord.errors import EtcdUnavailable, NotCandidate
from drover.coord.keys import Keyspace
from drover.coord.session import Session
from drover.coord.term import Term

__all__ = ["Election", "LeaderInfo", "observe", "observe_changes"]

log = logging.getLogger(__name__)


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


def _leader_info(service: str, kv: Any, revision: int) -> LeaderInfo:
    value = kv.value.decode()
    address, established = value.removesuffix(_ESTABLISHED), value.endswith(_ESTABLISHED)
    return LeaderInfo(service, address, kv.create_revision, kv.key.decode(), revision,
                      established)


class Election:
    """One candidacy of one session in the election of ``service``."""

    def __init__(self, client: Any, keyspace: Keyspace, service: str, session: Session, *,
                 address: str, recheck: float | None = None, timeout: float = 5.0) -> None:
        self.client = client
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
        prefix = self.prefix.encode()
        while True:
            self.session.check()
            resp = await _kv.range_(self.client, prefix, _kv.prefix_end(prefix),
                                    sort_create=True, rpc_timeout=self.timeout,
                                    deadline=self.timeout)
            self.session.check()
            mine = [kv for kv in resp.kvs if kv.key.decode() == self.key]
            if not mine or mine[0].create_revision != self.create_revision:
                raise NotCandidate(f"election key {self.key} vanished while campaigning")
            if resp.kvs[0].key.decode() == self.key:
                return Term(self.service, self.key, self.create_revision,
                            resp.header.revision, self.address)
            before = [kv for kv in resp.kvs if kv.create_revision < self.create_revision]
            predecessor = before[-1].key
            await self._wait_deleted({predecessor, self.key.encode()}, resp.header.revision + 1)

    async def _ensure_key(self) -> None:
        key = self.key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE,
                                 result=rpc.Compare.EQUAL, create_revision=0)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(
                key=key, value=self.address.encode(), lease=self.session.lease_id))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
        )
        resp = await _kv.txn(self.client, req, rpc_timeout=self.timeout)
        if resp.succeeded:
            self.create_revision = resp.header.revision
        else:
            self.create_revision = resp.responses[0].response_range.kvs[0].create_revision

    async def _wait_deleted(self, keys: set[bytes], start_revision: int) -> None:
        """Return when one of ``keys`` is deleted, the session is lost, or
        ``recheck`` seconds pass (the caller re-reads in every case)."""
        prefix = self.prefix.encode()
        call = None
        lost = asyncio.ensure_future(self.session.unsafe.wait())
        try:
            call = await _kv.open_watch(self.client, _kv.watch_create(
                prefix, _kv.prefix_end(prefix), start_revision, no_put=True))

            async def deleted() -> None:
                async for resp in call:
                    if resp.compact_revision or resp.canceled:
                        return
                    if any(ev.kv.key in keys for ev in resp.events):
                        return

            waiter = asyncio.ensure_future(deleted())
            try:
                await asyncio.wait({waiter, lost}, timeout=self.recheck,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError, rpc.AioRpcError):
                    await waiter
        except rpc.AioRpcError as e:
            log.info("election watch for %s failed, re-reading: %r", self.key, e)
            await asyncio.sleep(0.1)
        finally:
            lost.cancel()
            if call is not None:
                call.cancel()

    async def wait_key_gone(self, term: Term) -> str:
        """While leading: return (a reason) once our key is deleted or replaced.
        Also re-reads every ``recheck`` seconds in case the watch hung."""
        key = self.key.encode()
        start = term.won_at_revision + 1
        while True:
            try:
                resp = await _kv.range_(self.client, key, rpc_timeout=self.timeout)
            except EtcdUnavailable as e:
                # The session guards against a long outage; here just retry.
                log.info("leader key check for %s failed: %s", self.key, e)
                await asyncio.sleep(min(1.0, self.recheck))
                continue
            if not resp.kvs or resp.kvs[0].create_revision != term.revision:
                return f"election key {self.key} is gone"
            start = max(start, resp.header.revision + 1)
            call = None
            try:
                call = await _kv.open_watch(self.client, _kv.watch_create(key, b"", start))

                async def gone(call: Any = call) -> bool:
                    async for r in call:
                        if r.compact_revision or r.canceled:
                            return False
                        for ev in r.events:
                            if ev.type == rpc.Event.DELETE:
                                return True
                    return False

                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.recheck):
                        if await gone():
                            return f"election key {self.key} was deleted"
            except rpc.AioRpcError as e:
                log.info("leader key watch for %s failed, re-reading: %r", self.key, e)
                await asyncio.sleep(0.1)
            finally:
                if call is not None:
                    call.cancel()

    async def mark_established(self, term: Term, *, rpc_timeout: float = 5.0) -> bool:
        """Advertise that the leader of ``term`` serves (see module doc).
        False if the key is no longer ours (nothing written)."""
        key = self.key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE,
                                 result=rpc.Compare.EQUAL, create_revision=term.revision)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(
                key=key, value=(self.address + _ESTABLISHED).encode(),
                lease=self.session.lease_id))],
        )
        resp = await _kv.txn(self.client, req, rpc_timeout=rpc_timeout)
        return bool(resp.succeeded)

    async def resign(self, term: Term | None = None, *, rpc_timeout: float = 1.0) -> bool:
        """Delete our key if it is still ours (same create_revision). Bounded."""
        key = self.key.encode()
        rev = term.revision if term is not None else self.create_revision
        if rev <= 0:
            return False
        req = rpc.TxnRequest(
            compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE,
                                 result=rpc.Compare.EQUAL, create_revision=rev)],
            success=[rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key))],
        )
        try:
            resp = await _kv.txn(self.client, req, rpc_timeout=rpc_timeout)
        except EtcdUnavailable as e:
            log.info("resign of %s failed (the lease will expire it): %s", self.key, e)
            return False
        return bool(resp.succeeded)


async def observe(client: Any, keyspace: Keyspace, service: str, *,
                  rpc_timeout: float = 5.0) -> LeaderInfo | None:
    """The current leader of ``service`` (linearizable read), or None."""
    prefix = keyspace.election_prefix(service).encode()
    resp = await _kv.range_(client, prefix, _kv.prefix_end(prefix), sort_create=True,
                            limit=1, rpc_timeout=rpc_timeout, deadline=rpc_timeout)
    if not resp.kvs:
        return None
    return _leader_info(service, resp.kvs[0], resp.header.revision)


async def observe_changes(client: Any, keyspace: Keyspace, service: str, *,
                          recheck: float = 5.0) -> AsyncIterator[LeaderInfo | None]:
    """Yield the leader now, then on every change (None: no leader).

    Re-reads on every event in the election prefix and every ``recheck``
    seconds; survives etcd errors by retrying (it never raises
    :class:`EtcdUnavailable`, it just yields nothing new meanwhile).
    """
    prefix = keyspace.election_prefix(service).encode()
    last: tuple[str, int, bool] | bool | None = False  # False: nothing yielded yet
    while True:
        call = None
        try:
            info = await observe(client, keyspace, service)
            ident = (info.address, info.term, info.established) if info else None
            if ident != last:
                last = ident
                yield info
            start = (info.revision if info else 0) + 1
            if info is None:
                resp = await _kv.range_(client, prefix, _kv.prefix_end(prefix), count_only=True)
                start = resp.header.revision + 1
            call = await _kv.open_watch(client, _kv.watch_create(
                prefix, _kv.prefix_end(prefix), start))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(recheck):
                    async for r in call:
                        if r.events or r.compact_revision or r.canceled:
                            break
        except (EtcdUnavailable, rpc.AioRpcError) as e:
            log.info("observing %s leader: %r; retrying", service, e)
            await asyncio.sleep(0.2)
        finally:
            if call is not None:
                call.cancel()


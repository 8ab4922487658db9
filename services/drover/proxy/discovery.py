"""Discovery: membership and election keys in etcd -> the proxy's server lists.

One watch over the whole membership prefix (every service, on a *bulk*
client) feeds :meth:`ServerLists.apply_membership`; one observer per
leader-only service (on the control client) feeds ``set_leader``. Because a
watch resumes from its last revision and re-lists after compaction, a proxy
whose every backend replica was replaced by new ones at new addresses
simply sees the new set (the hashicorp/nomad#1590 strand cannot happen:
nothing depends on reaching an old server to learn the new ones).

Only a change of what the lists are made of (a backend replica's name,
address, rpc version or incarnation) counts as a change: backends updating
their own applied revision and proxies publishing theirs do not. On such a
change the lists are updated and the revision is published through the
replica's membership entry (``Registration.set_applied_revision``) and
recorded in the :class:`~drover.proxy.core.change_log.ChangeLog` the convergence
barrier reads (see that module for why not every revision is published).

``pause()``/``resume()`` hold discovery back (events queue in the watch):
an operator's freeze, and how tests show the barrier reporting a replica
behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from drover.coord import Keyspace, Member, MemberList, list_members, observe_changes
from drover.coord import watch_members as _watch_members
from drover.coord.election import ObserveKV
from drover.coord.watch import WatchKV
from drover.proxy.core.change_log import ChangeLog
from drover.proxy.core.server import Server
from drover.proxy.core.server_lists import ServerLists

log = logging.getLogger(__name__)

#: What a backend replica contributes to the lists; other fields changing is no change.
Projection = Mapping[str, frozenset[tuple[str, str, int, float]]]


class AppliedSink(Protocol):
    """Where the applied revision is published (the replica's membership entry)."""

    def set_applied_revision(self, revision: int) -> None: ...


class Pool(Protocol):
    def refresh(self, address: str, incarnation: object) -> None: ...

    def retain(self, addresses: Iterable[str]) -> None: ...


class Discovery:
    def __init__(
        self,
        lists: ServerLists,
        pool: Pool,
        *,
        bulk: WatchKV,
        control: ObserveKV,
        keyspace: Keyspace,
        own_service: str,
        sink: AppliedSink | None,
        leader_recheck: float = 5.0,
        on_gone: Callable[[str], object] | None = None,
    ) -> None:
        self.lists = lists
        self.changelog = ChangeLog()
        self.proxies: tuple[Member, ...] = ()
        self.first_applied = asyncio.Event()
        self._pool = pool
        self._bulk = bulk
        self._control = control
        self._keyspace = keyspace
        self._own_service = own_service
        self._sink = sink
        self._leader_recheck = leader_recheck
        self._on_gone = on_gone
        self._projection: Projection | None = None
        self._changed = asyncio.Event()
        self._running = asyncio.Event()
        self._running.set()

    # -- control -------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    async def wait_changed(self, within: float) -> None:
        """Return on the next applied membership or leader change, or after ``within`` seconds."""
        event = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, within)):
                await event.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- membership ------------------------------------------------------------

    def _project(self, members: Iterable[Member]) -> Projection:
        out: dict[str, set[tuple[str, str, int, float]]] = {s: set() for s in self.lists.services}
        for m in members:
            if m.service in out:
                out[m.service].add((m.replica, m.address, m.rpc_version, m.started_at))
        return {s: frozenset(v) for s, v in out.items()}

    def apply(self, ml: MemberList) -> bool:
        """Apply one membership view; True if it changed the lists."""
        projection = self._project(ml.members)
        changed = projection != self._projection
        if changed:
            servers: dict[str, list[Server]] = {s: [] for s in self.lists.services}
            for m in ml.members:
                if m.service in servers:
                    servers[m.service].append(Server(m.address, m.replica, m.rpc_version))
                    self._pool.refresh(m.address, (m.replica, m.started_at))
            before = self._listed()
            update = self.lists.apply_membership(ml.revision, servers)
            for warning in update.warnings:
                log.warning("%s", warning)
            self._projection = projection
            self._retain_channels()
            if self._on_gone is not None:
                # Calls in flight on a server that left end now, not at their deadline.
                for address in sorted(before - self._listed()):
                    self._on_gone(address)
            if self._sink is not None:
                self._sink.set_applied_revision(ml.revision)
            log.info("applied membership revision %d", ml.revision)
        self.changelog.record(ml.revision, changed=changed)
        self.proxies = tuple(m for m in ml.members if m.service == self._own_service)
        self.first_applied.set()
        self._notify()
        return changed

    def _listed(self) -> set[str]:
        return {s.address for svc in self.lists.services for s in self.lists.get(svc).discovered}

    def _retain_channels(self) -> None:
        keep: set[str] = set()
        for service in self.lists.services:
            lst = self.lists.get(service)
            keep.update(s.address for s in lst.servers)
            if lst.leader:  # a leader may be elected before membership lists it
                keep.add(lst.leader)
        self._pool.retain(keep)

    async def run_membership(self) -> None:
        async for ml in _watch_members(self._bulk, self._keyspace, ""):
            await self._running.wait()
            self.apply(ml)

    async def confirm_quiet(self) -> None:
        """Read membership now; if no backend changed since our view, we have
        in effect observed everything up to the read's revision."""
        if self._projection is None:
            return
        ml = await list_members(self._control, self._keyspace, "")
        if self._project(ml.members) == self._projection:
            self.changelog.mark_quiet_through(ml.revision)

    # -- leaders ---------------------------------------------------------------

    async def run_leader(self, service: str) -> None:
        lst = self.lists.get(service)
        async for info in observe_changes(
            self._control, self._keyspace, service, recheck=self._leader_recheck
        ):
            await self._running.wait()
            address = info.address if info is not None else None
            lst.set_leader(address, info.term if info is not None else 0)
            log.info("leader of %s: %s", service, address or "none")
            self._notify()

"""The ordered server list of one backend service (Nomad's client servers manager).

Rules, and why:

* **First in use.** ``servers[0]`` gets the calls; everyone else is a spare.
  Clients spread over servers because each list is shuffled independently.
* **Rotate on failure, only at the front.** :meth:`ServerList.notify_failed`
  moves the failed server to the back only if it is still at the front and
  there is more than one server. Concurrent calls failing on the same server
  report the same failure several times; the front check makes that one
  rotation, not a rotation of a healthy successor.
* **Same set keeps its order.** Discovery re-reads membership on every
  change. If the set of addresses is unchanged the order is kept (records
  are refreshed in place); only a different set is shuffled in, and a new
  set bumps :attr:`ServerList.generation`.
* **Rebalance in two halves.** Pinging is I/O, so the shell calls
  :meth:`~ServerList.begin_rebalance` (a shuffled copy and the generation),
  pings in that order (it may stop at the first healthy one) and hands the
  results to :meth:`~ServerList.finish_rebalance`. Unreachable servers move
  to the back in ping order; the new order is saved only if one answered
  (all failing keeps the old order) and never if discovery changed the set
  meanwhile (the plan would resurrect removed servers or drop new ones).
  Rotations that happened during the pings are overwritten: the pings are
  the fresher verdict on the order.
* **Backups last.** Static backup servers from config live in their own
  section after the discovered ones, in config order, and are never
  shuffled with them. They are used once every discovered server has failed
  at the front in a row (a full lap) or when none is discovered; a success
  on a discovered server, a saved rebalance or a new discovered set ends
  the fallback.
* **Leader first.** For leader-only services the list also knows the leader
  (from the election key) and a ``drover-leader`` hint from a replica, which
  overrides until discovery reports a different leader or the hinted
  server fails. :meth:`~ServerList.pick` returns the leader unless a call to
  it just failed, then the first server (a follower answers with a hint).
* **A deposed leader is not followed.** Once the election key says a leader
  is gone (replaced, or no leader at all), its address is *deposed*: hints
  naming it from followers (their stale view) are ignored and, while no leader is
  known, leader-only calls go to other servers first. It stops being
  deposed when elected again (only the last :data:`DEPOSED_KEPT` are kept).
* **Version gate.** Servers advertising a newer rpc version are left off
  (see :mod:`drover.proxy.core.version_gate`).

Times are monotonic seconds from the injected clock; the shell converts them
to wall-clock timestamps for ListServers. Not thread-safe: one event loop.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from drover.proxy.config import ProxyConfig
from drover.proxy.core.interval import RebalanceScheduler
from drover.proxy.core.rebalance import (
    PingResult,
    RebalanceOutcome,
    RebalancePlan,
    RebalanceVerdict,
    check_ping_order,
    reorder,
)
from drover.proxy.core.server import Server
from drover.proxy.core.snapshot import ServerListSnapshot, ServerStatus
from drover.proxy.core.version_gate import VersionGate
from drover.proxy.errors import ForeignPlan, InvalidServer

#: How many deposed leaders a list remembers.
DEPOSED_KEPT = 16


@dataclass(frozen=True)
class DiscoveryUpdate:
    """What :meth:`ServerList.set_discovered` did."""

    changed: bool
    generation: int
    skipped: tuple[Server, ...]
    #: Throttled "newer rpc version" warnings to log.
    warnings: tuple[str, ...]


@dataclass
class _Health:
    healthy: bool = True
    last_failure: float | None = None


class ServerList:
    """The server list of one backend service. See the module docstring."""

    def __init__(
        self,
        service: str,
        config: ProxyConfig,
        clock: Callable[[], float],
        rng: random.Random,
        *,
        gate: VersionGate | None = None,
        backups: Iterable[str] = (),
    ) -> None:
        self.service = service
        self.leader_only = service in config.leader_only_services
        self._clock = clock
        self._rng = rng
        self._gate = gate if gate is not None else VersionGate(config, clock)
        self._scheduler = RebalanceScheduler(config, clock, rng)
        self._discovered: list[Server] = []
        self._backups: list[Server] = []
        self._skipped: frozenset[str] = frozenset()
        self._health: dict[str, _Health] = {}
        self._generation = 0
        # Failures at the front of the discovered section since the last sign
        # of life from it; a full lap (>= its length) falls back to backups.
        self._front_failures = 0
        self._elected: str | None = None
        self._elected_term = 0
        self._hint: str | None = None
        self._leader_suspect = False
        self._deposed: dict[str, None] = {}  # insertion-ordered set
        # Failed calls that rotated the front server to the back (metrics).
        self.rotations = 0
        self.set_backups(backups)

    # -- reading -----------------------------------------------------------

    @property
    def generation(self) -> int:
        """Bumped whenever discovery changes the set of discovered addresses."""
        return self._generation

    @property
    def discovered(self) -> tuple[Server, ...]:
        return tuple(self._discovered)

    @property
    def backups(self) -> tuple[Server, ...]:
        """Backups not also discovered (a discovered record wins), in order."""
        known = {s.address for s in self._discovered}
        return tuple(b for b in self._backups if b.address not in known)

    @property
    def servers(self) -> tuple[Server, ...]:
        """The whole list: discovered servers, then backups."""
        return self.discovered + self.backups

    @property
    def leader(self) -> str | None:
        """The leader to call: the hint if one overrides, else the elected one."""
        return self._hint or self._elected

    @property
    def next_rebalance(self) -> float | None:
        return self._scheduler.next_at

    def healthy(self, address: str) -> bool:
        return self._health.get(address, _Health()).healthy

    def _fallen_back(self) -> bool:
        return bool(self.backups) and (
            not self._discovered or self._front_failures >= len(self._discovered)
        )

    def _front(self) -> Server | None:
        if self._fallen_back():
            return self.backups[0]
        return self._discovered[0] if self._discovered else None

    def pick(self) -> Server | None:
        """The server for the next call; None when the list is empty.

        Leader-only services get the leader unless a call to it just failed
        or it speaks a newer rpc version; a leader missing from the list
        (membership lags the election) is still called by address.
        """
        leader = self.leader
        if (
            self.leader_only
            and leader is not None
            and not self._leader_suspect
            and leader not in self._skipped
        ):
            for server in self.servers:
                if server.address == leader:
                    return server
            return Server(address=leader)
        front = self._front()
        if self.leader_only and front is not None and front.address in self._deposed:
            for server in self.servers:
                if server.address not in self._deposed:
                    return server
        return front

    @property
    def deposed(self) -> frozenset[str]:
        """Former leaders whose hints are ignored (see the module docstring)."""
        return frozenset(self._deposed)

    def snapshot(self) -> ServerListSnapshot:
        leader = self.leader if self.leader_only else None
        front = self.pick()
        in_use = front.address if front is not None else None
        statuses = []
        for server in self.servers:
            health = self._health.get(server.address, _Health())
            statuses.append(
                ServerStatus(
                    server=server,
                    healthy=health.healthy,
                    last_failure=health.last_failure,
                    leader=server.address == leader,
                    in_use=server.address == in_use,
                )
            )
        return ServerListSnapshot(
            service=self.service,
            servers=tuple(statuses),
            leader=leader,
            next_rebalance=self._scheduler.next_at,
            generation=self._generation,
            taken_at=self._clock(),
        )

    # -- discovery and config ----------------------------------------------

    def set_discovered(self, servers: Iterable[Server]) -> DiscoveryUpdate:
        """Replace the discovered servers with membership's current view."""
        records = list(servers)
        for server in records:
            if server.backup:
                raise InvalidServer(
                    f"discovered server {server.address} is marked as a backup",
                    metadata={"address": server.address},
                )
        admission = self._gate.admit(records, self.service)
        # An address with any record of a newer version is skipped whole: during
        # an upgrade in place, the old replica's key outlives its process.
        self._skipped = frozenset(s.address for s in admission.skipped)
        fresh: dict[str, Server] = {}
        for server in admission.admitted:
            if server.address not in self._skipped:
                fresh.setdefault(server.address, server)
        changed = set(fresh) != {s.address for s in self._discovered}
        if changed:
            order = list(fresh.values())
            self._rng.shuffle(order)
            self._discovered = order
            self._generation += 1
            self._front_failures = 0
            self._prune_health()
        else:
            self._discovered = [fresh[s.address] for s in self._discovered]
        return DiscoveryUpdate(changed, self._generation, admission.skipped, admission.warnings)

    def set_backups(self, addresses: Iterable[str]) -> None:
        """Replace the static backup servers (config order, duplicates dropped)."""
        seen: dict[str, Server] = {}
        for address in addresses:
            seen.setdefault(address, Server.backup_at(address))
        self._backups = list(seen.values())
        self._prune_health()

    def set_leader(self, address: str | None, term: int = 0) -> None:
        """The leader from the election key (None: no leader right now) and
        its term (the key's create_revision; 0 if unknown).

        A different leader than before ends any hint; the same one confirms
        a hint only if they agree.
        """
        self._elected_term = term if address is not None else 0
        if address != self._elected:
            for old in (self._elected, self._hint):
                if old is not None and old != address:
                    self._deposed.pop(old, None)
                    self._deposed[old] = None
            if address is not None:
                self._deposed.pop(address, None)
            while len(self._deposed) > DEPOSED_KEPT:
                del self._deposed[next(iter(self._deposed))]
            self._elected = address
            self._hint = None
            self._leader_suspect = False
        elif address is not None and address == self._hint:
            self._hint = None

    def follow_hint(self, address: str, term: int = 0, *, source: str | None = None) -> bool:
        """Replica ``source`` answered with ``drover-leader: address`` (of
        ``term``, if it said): call it next.

        False (and nothing changes) if ``address`` is a deposed leader and
        the hint comes from a follower: the election key is fresher than a
        follower's view of it. The leader the proxy knows denying that it
        leads is believed (the proxy's view is the stale one then). False too
        for a hint of an older term than the elected leader the proxy knows
        (the replica has not seen the election yet): calls do not bounce back
        to a deposed leader.
        """
        if address in self._deposed and (source is None or source != self._elected):
            return False
        if term and self._elected_term and term < self._elected_term:
            return False
        self._hint = None if address == self._elected else address
        self._leader_suspect = False
        return True

    def _prune_health(self) -> None:
        live = {s.address for s in self._discovered} | {b.address for b in self._backups}
        for address in [a for a in self._health if a not in live]:
            del self._health[address]


    # -- call outcomes -----------------------------------------------------

    def notify_failed(self, server: Server) -> bool:
        """A call to ``server`` failed; True if that rotated the list."""
        address = server.address
        if address == self.leader and self.leader_only:
            if address == self._hint:
                self._hint = None
            else:
                self._leader_suspect = True
        if address in {s.address for s in self._discovered}:
            section = self._discovered
            if section[0].address == address:
                self._front_failures += 1
        elif address in {b.address for b in self.backups}:
            section = self._backups
        else:
            return False  # a stale report about a server no longer listed
        self._health[address] = _Health(healthy=False, last_failure=self._clock())
        front = self.backups[0] if section is self._backups else section[0]
        if front.address != address or len(section) < 2:
            return False
        section.remove(front)
        section.append(front)
        self.rotations += 1
        return True

    def notify_ok(self, server: Server) -> None:
        """A call to ``server`` succeeded."""
        address = server.address
        if address == self.leader:
            self._leader_suspect = False
        if address in {s.address for s in self.servers}:
            self._health.setdefault(address, _Health()).healthy = True
        if address in {s.address for s in self._discovered}:
            self._front_failures = 0

    # -- rebalance -----------------------------------------------------------

    def begin_rebalance(self) -> RebalancePlan:
        """A shuffled copy of the discovered servers to ping, in this order."""
        order = list(self._discovered)
        self._rng.shuffle(order)
        return RebalancePlan(self.service, tuple(order), self._generation, self._clock())

    def finish_rebalance(
        self, plan: RebalancePlan, results: Sequence[PingResult]
    ) -> RebalanceOutcome:
        """Apply ping results (in ping order, a subsequence of ``plan.order``)."""
        if plan.service != self.service:
            raise ForeignPlan(
                f"a rebalance plan of {plan.service!r} was handed to {self.service!r}",
                metadata={"plan_service": plan.service, "service": self.service},
            )
        check_ping_order(plan, results)
        now = self._clock()
        listed = {s.address for s in self.servers}
        for result in results:
            if result.address in listed:
                health = self._health.setdefault(result.address, _Health())
                health.healthy = result.healthy
                if not result.healthy:
                    health.last_failure = now
        if plan.generation != self._generation:
            return self._outcome(
                RebalanceVerdict.DISCOVERY_CHANGED,
                f"discovery changed the servers during the pings "
                f"(generation {plan.generation} -> {self._generation}); kept the new list",
            )
        if not plan.order:
            return self._outcome(RebalanceVerdict.NO_SERVERS, "no discovered servers to rebalance")
        order = reorder(plan, results)
        if order is None:
            return self._outcome(
                RebalanceVerdict.NO_HEALTHY_SERVER,
                f"none of {len(results)} pinged servers answered; kept the current order",
            )
        current = {s.address: s for s in self._discovered}
        self._discovered = [current[a] for a in order]
        self._front_failures = 0
        unreachable = sum(1 for r in results if not r.healthy)
        return self._outcome(
            RebalanceVerdict.SAVED,
            f"saved a new order led by {order[0]} ({unreachable} unreachable moved to the back)",
        )

    def _outcome(self, verdict: RebalanceVerdict, message: str) -> RebalanceOutcome:
        return RebalanceOutcome(verdict, self.servers, message)

    def schedule_rebalance(self, num_clients: int) -> float:
        """Set the next rebalance time for a cluster of ``num_clients`` clients."""
        return self._scheduler.schedule(num_clients, len(self.servers))

    def rebalance_due(self) -> bool:
        return self._scheduler.due()

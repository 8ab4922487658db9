"""All of a proxy's server lists, one per backend service, and their revision.

Membership is one etcd prefix for every service, read at one revision, so
the lists are updated together by :meth:`ServerLists.apply_membership` and
the proxy records that revision as applied: it is what the replica
publishes in its own membership entry for the convergence barrier. A
revision older than the one applied is ignored (a late, reordered update
must not roll the lists back). One :class:`VersionGate` serves all lists so
each skipped server warns once per interval however many lists it is on.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from drover.proxy.config import ProxyConfig
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import DiscoveryUpdate, ServerList
from drover.proxy.core.snapshot import ListsSnapshot
from drover.proxy.core.version_gate import VersionGate
from drover.proxy.errors import InvalidRevision, UnknownService


@dataclass(frozen=True)
class MembershipUpdate:
    revision: int
    #: False when the revision was older than the one already applied.
    applied: bool
    #: Per service, what discovery did (empty when not applied).
    updates: Mapping[str, DiscoveryUpdate]

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(w for u in self.updates.values() for w in u.warnings)


class ServerLists:
    """The per-service :class:`ServerList` s of one proxy replica."""

    def __init__(
        self,
        config: ProxyConfig,
        clock: Callable[[], float],
        rng: random.Random,
        *,
        backups: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        backups = backups or {}
        unknown = sorted(set(backups) - set(config.services))
        if unknown:
            raise UnknownService(
                f"backup servers given for unknown services {unknown}",
                metadata={"service": unknown[0]},
            )
        self._clock = clock
        self._gate = VersionGate(config, clock)
        self._lists = {
            service: ServerList(
                service, config, clock, rng, gate=self._gate, backups=backups.get(service, ())
            )
            for service in config.services
        }
        self._revision = 0

    @property
    def services(self) -> tuple[str, ...]:
        return tuple(self._lists)

    @property
    def applied_revision(self) -> int:
        """The membership revision the lists reflect (0: none applied yet)."""
        return self._revision

    def get(self, service: str) -> ServerList:
        try:
            return self._lists[service]
        except KeyError:
            raise UnknownService(
                f"no server list for service {service!r}; known: {sorted(self._lists)}",
                metadata={"service": service},
            ) from None

    def apply_membership(
        self, revision: int, members: Mapping[str, Iterable[Server]]
    ) -> MembershipUpdate:
        """Membership of every service as read at ``revision``.

        A service missing from ``members`` has no members; services the
        proxy keeps no list for (the proxies themselves) are ignored.
        """
        if revision < 0:
            raise InvalidRevision(
                f"membership revision must not be negative, got {revision}",
                metadata={"revision": str(revision)},
            )
        if revision < self._revision:
            return MembershipUpdate(revision, False, {})
        updates = {
            service: lst.set_discovered(members.get(service, ()))
            for service, lst in self._lists.items()
        }
        self._revision = revision
        return MembershipUpdate(revision, True, updates)

    def due_for_rebalance(self) -> tuple[str, ...]:
        """Services whose scheduled rebalance time has come."""
        return tuple(s for s, lst in self._lists.items() if lst.rebalance_due())

    def snapshot(self, service: str = "") -> ListsSnapshot:
        """Every list, or only ``service`` (empty: all, as ListServers asks)."""
        lists = [self.get(service)] if service else list(self._lists.values())
        return ListsSnapshot(
            lists=tuple(lst.snapshot() for lst in lists),
            revision=self._revision,
            taken_at=self._clock(),
        )

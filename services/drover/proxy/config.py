"""The client proxy's tunables, with every default in one place.

The defaults are Nomad's client RPC proxy constants: a connection is reused
for at least two minutes plus up to 50% jitter (so that clients started
together do not rebalance together), and the cluster as a whole opens at
most 64 new connections per second per server when rebalancing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from drover.config import RPC_VERSION
from drover.errors import InvalidArgument
from drover.proxy.errors import InvalidBackupServer

#: The backend services the proxy keeps a server list for (membership names).
BACKEND_SERVICES: tuple[str, ...] = ("state", "broker", "deployments")
#: Default of ``hold_timeout`` (``--hold-timeout`` / ``DROVER_HOLD_TIMEOUT``).
DEFAULT_HOLD_TIMEOUT = 3.0
#: Services whose writes only the leader takes: calls go to the leader first.
LEADER_ONLY_SERVICES: frozenset[str] = frozenset({"broker", "deployments"})


@dataclass(frozen=True)
class ProxyConfig:
    """How the proxy keeps and rebalances its server lists."""

    #: Never rebalance more often than this (seconds).
    min_reuse: float = 120.0
    #: Up to this fraction of ``min_reuse`` is added at random to each interval.
    jitter_fraction: float = 0.5
    #: Cluster-wide budget of new connections per second, per server.
    new_conns_per_sec_per_server: float = 64.0
    #: At most one "newer rpc version" warning per server per this (seconds).
    version_warning_interval: float = 3 * 3600.0
    #: The rpc version this proxy speaks; servers advertising more are skipped.
    rpc_version: int = RPC_VERSION
    #: Backend services to keep lists for.
    services: tuple[str, ...] = BACKEND_SERVICES
    #: Backend services that route to their leader.
    leader_only_services: frozenset[str] = field(default=LEADER_ONLY_SERVICES)
    #: Timeout of one health ping during a rebalance (seconds).
    ping_timeout: float = 1.0
    #: How often this replica's applied revision may be written to its
    #: membership entry (seconds). Short: it bounds the convergence barrier's
    #: latency, and it is written only when the server lists change.
    applied_flush_interval: float = 0.02
    #: How long a forwarded attempt waits on a server that shows no sign of
    #: life before the proxy ends it (seconds; see :mod:`drover.rpc.hold`).
    #: Independent of the caller's deadline.
    hold_timeout: float = DEFAULT_HOLD_TIMEOUT

    def __post_init__(self) -> None:
        if self.min_reuse <= 0:
            raise InvalidArgument(f"min_reuse must be positive, got {self.min_reuse}")
        if not 0 <= self.jitter_fraction <= 1:
            raise InvalidArgument(
                f"jitter_fraction must be within [0, 1], got {self.jitter_fraction}"
            )
        if self.new_conns_per_sec_per_server <= 0:
            raise InvalidArgument(
                "new_conns_per_sec_per_server must be positive, "
                f"got {self.new_conns_per_sec_per_server}"
            )
        if self.version_warning_interval < 0:
            raise InvalidArgument(
                "version_warning_interval must not be negative, "
                f"got {self.version_warning_interval}"
            )
        if len(set(self.services)) != len(self.services) or not all(self.services):
            raise InvalidArgument(f"services must be distinct non-empty names: {self.services}")
        if self.ping_timeout <= 0 or self.applied_flush_interval < 0:
            raise InvalidArgument(
                f"ping_timeout must be positive and applied_flush_interval not negative, got "
                f"{self.ping_timeout} and {self.applied_flush_interval}"
            )
        if self.hold_timeout <= 0:
            raise InvalidArgument(f"hold_timeout must be positive, got {self.hold_timeout}")
        if self.rpc_version < 1:
            raise InvalidArgument(f"rpc_version must be at least 1, got {self.rpc_version}")


def parse_backup_servers(
    entries: Iterable[str], services: Iterable[str] = BACKEND_SERVICES
) -> dict[str, tuple[str, ...]]:
    """``("state=10.0.0.1:4650", "broker=10.0.0.2:4651")`` -> per-service backups.

    ``ServeSettings.backup_servers`` (``--backup-servers``) is one flat list;
    each entry names its backend service, so one flag configures every list.
    Order within a service is kept (it is the fallback order).
    """
    known = tuple(services)
    out: dict[str, list[str]] = {}
    for raw in entries:
        entry = raw.strip()
        service, sep, address = entry.partition("=")
        service, address = service.strip(), address.strip()
        host, colon, port = address.rpartition(":")
        if not sep or not service or not colon or not host or not port.isdigit():
            raise InvalidBackupServer(
                f"backup server {raw!r} must be service=host:port",
                metadata={"entry": raw},
            )
        if service not in known:
            raise InvalidBackupServer(
                f"backup server {raw!r} names unknown service {service!r}; known: {known}",
                metadata={"entry": raw, "service": service},
            )
        out.setdefault(service, []).append(address)
    return {service: tuple(addresses) for service, addresses in out.items()}

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field

from drover.coord.keys import DEFAULT_ROOT

ENV_PREFIX = "DROVER_"

#: The rpc version every drover server speaks; the proxy skips newer ones.
RPC_VERSION = 1


def env_default(name: str, default: str) -> str:
    """``DROVER_<name>`` from the environment, else ``default``."""
    return os.environ.get(ENV_PREFIX + name, default)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for a TLS client (etcd) or server. All empty: plaintext."""

    ca: str = ""
    cert: str = ""
    key: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.ca or self.cert)


@dataclass(frozen=True)
class EtcdSettings:
    """How to reach etcd. ``endpoints`` are ``host:port``; the first is used
    first and the others on failure."""

    endpoints: tuple[str, ...] = ("127.0.0.1:2379",)
    prefix: str = DEFAULT_ROOT
    tls: TlsFiles = field(default_factory=TlsFiles)
    session_ttl: int = 10
    dial_timeout: float = 5.0

    @classmethod
    def parse_endpoints(cls, value: str) -> tuple[str, ...]:
        eps = []
        for raw in value.split(","):
            ep = raw.strip().removeprefix("http://").removeprefix("https://").rstrip("/")
            if ep:
                if ":" not in ep:
                    raise ValueError(f"etcd endpoint {raw!r} must be host:port")
                eps.append(ep)
        if not eps:
            raise ValueError("at least one etcd endpoint is required")
        return tuple(eps)


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: str) -> float:
    """Seconds from ``"90"``, ``"90s"``, ``"15m"``, ``"1h"``, ``"1h30m"``, ``"2d"``."""
    text = value.strip().lower()
    if not text:
        raise ValueError("not a duration: empty (e.g. 90s, 15m, 1h, 2d)")
    try:
        return float(text)
    except ValueError:
        pass
    total, number = 0.0, ""
    i = 0
    while i < len(text):
        c = text[i]
        if c.isdigit() or c == ".":
            number += c
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else c
        if unit not in _UNITS or not number:
            raise ValueError(f"not a duration: {value[:40]!r} (e.g. 90s, 15m, 1h, 2d)")
        total += float(number) * _UNITS[unit]
        number = ""
        i += len(unit)
    if number:
        raise ValueError(f"not a duration: {value[:40]!r} (a number needs a unit after another)")
    return total


@dataclass(frozen=True)
class GcSettings:
    """Garbage collection (the deployment watcher's leader runs it). Seconds;
    Nomad's defaults: 1 h for evaluations and deployments, 4 h for jobs,
    24 h for nodes."""

    interval: float = 300.0
    eval_threshold: float = 3600.0
    deployment_threshold: float = 3600.0
    job_threshold: float = 4 * 3600.0
    node_threshold: float = 24 * 3600.0


#: The ACL down policies (Consul's ``acl.down_policy``, the two that fit a
#: watch-fed view): ``deny`` fails closed, ``extend-cache`` serves on.
ACL_DOWN_POLICIES = ("deny", "extend-cache")


@dataclass(frozen=True)
class AclSettings:
    """How long a server trusts its ACL view (tokens, policies) without
    proof that it is current, and what it does past that.

    ``max_stale``: seconds since the view was last *proven* current (a
    linearizable read of etcd showed it held every ACL change) after which
    it is stale. ``down_policy``: ``deny`` (default, fail closed): while
    stale, every call that needs a capability is refused UNAVAILABLE with
    reason ACL_DATA_STALE; ``extend-cache``: keep judging with the cached
    view, so a token revoked during the outage keeps working until etcd is
    back (availability over revocation, as Consul's ``extend-cache``).
    The view is proven current every ``max_stale / 6`` (one small etcd
    read, given as long again to answer), so a healthy but slow etcd has
    three tries before the bound.
    """

    max_stale: float = 30.0
    down_policy: str = "deny"

    def __post_init__(self) -> None:
        if self.down_policy not in ACL_DOWN_POLICIES:
            raise ValueError(f"ACL down policy must be one of {', '.join(ACL_DOWN_POLICIES)}, "
                             f"not {self.down_policy[:40]!r}")
        if not self.max_stale > 0:
            raise ValueError(f"ACL max stale must be positive, not {self.max_stale!r}")

    @property
    def check_interval(self) -> float:
        """Seconds between two proofs that the view is current."""
        return self.max_stale / 6

    @property
    def check_timeout(self) -> float:
        """Longest one proof may take (interval + timeout < max_stale)."""
        return self.max_stale / 6


def _default_replica() -> str:
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class ServeSettings:
    """Everything ``drover serve <service>`` needs.

    ``advertise`` is the address other processes dial (membership, leader
    hints); it defaults to ``listen`` with a wildcard host replaced by
    127.0.0.1. ``health_listen`` is an optional extra plaintext port serving
    only grpc.health.v1 (for Kubernetes probes when TLS is on).
    """

    service: str
    listen: str = "127.0.0.1:0"
    advertise: str = ""
    replica: str = field(default_factory=_default_replica)
    etcd: EtcdSettings = field(default_factory=EtcdSettings)
    metrics_listen: str = ""
    health_listen: str = ""
    tls: TlsFiles = field(default_factory=TlsFiles)
    shutdown_grace: float = 5.0
    # How long a stop waits for the background tasks it cancelled to end
    # (drover.tasks.cancel_and_wait); one still running is logged and left.
    # Not the grace: a grace of 0 cuts RPCs short, tasks still get this long.
    stop_timeout: float = 5.0
    log_level: str = "INFO"
    log_json: bool = False
    rpc_version: int = RPC_VERSION
    # Backend addresses for services that call others (watcher/broker → state,
    # proxy static backups). Empty: discover through membership.
    state_addresses: tuple[str, ...] = ()
    backup_servers: tuple[str, ...] = ()
    # How long a call waits on a server showing no life: the proxy's
    # forwarded attempts, the broker's and watcher's state-replica calls.
    hold_timeout: float = 3.0
    gc: GcSettings = field(default_factory=GcSettings)
    # Enforce access control (tokens, policies; drover.acl) on every drover RPC.
    acl: bool = False
    # Tunables given on the command line or in the environment, as
    # ("<service>_<name>", value); unset ones keep their default (the
    # services' configs are built from them: drover.config.tuned_config).
    tuning: tuple[tuple[str, float], ...] = ()
    # With ``acl``: how stale the ACL view may get and what happens past it.
    acl_settings: AclSettings = field(default_factory=AclSettings)

    def advertised(self, bound_port: int) -> str:
        if self.advertise:
            return self.advertise
        host, _, _ = self.listen.rpartition(":")
        if host in ("", "0.0.0.0", "[::]", "::"):
            host = "127.0.0.1"
        return f"{host}:{bound_port}"

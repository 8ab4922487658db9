"""Skip servers that speak a newer rpc version than the proxy, and say so rarely.

During a rolling upgrade, servers of the next version join membership before
the proxies are upgraded. A proxy must not send them calls it may not speak
correctly, so it leaves them off its lists (they come back on their own once
the proxy is upgraded and its version catches up). Each skip is worth a
warning, but membership is re-read on every change, so warnings are
throttled: at most one per server (keyed by address) per
``version_warning_interval`` (3 h), as Nomad does.

The gate is pure: it returns the warning lines; the shell logs them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from drover.proxy.config import ProxyConfig
from drover.proxy.core.server import UNKNOWN_RPC_VERSION, Server


class WarningThrottle:
    """Allows one event per key per ``interval`` seconds of an injected clock."""

    def __init__(self, interval: float, clock: Callable[[], float]) -> None:
        self._interval = interval
        self._clock = clock
        self._last: dict[Hashable, float] = {}

    def allow(self, key: Hashable) -> bool:
        """True (and remembers now) if ``key`` has not fired within the interval."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            return False
        self._last[key] = now
        return True

    def forget_before(self, cutoff: float) -> None:
        """Drop keys last fired before ``cutoff`` (bounds memory under churn)."""
        self._last = {k: t for k, t in self._last.items() if t >= cutoff}

    def __len__(self) -> int:
        return len(self._last)


@dataclass(frozen=True)
class Admission:
    """What the gate made of a discovered list."""

    admitted: tuple[Server, ...]
    skipped: tuple[Server, ...]
    #: Warning lines due now (throttled); the caller logs them.
    warnings: tuple[str, ...]


class VersionGate:
    """Filters discovered servers by rpc version, with throttled warnings.

    One gate serves every list of a proxy, so a server known under two
    services still warns once per interval.
    """

    def __init__(self, config: ProxyConfig, clock: Callable[[], float]) -> None:
        self._rpc_version = config.rpc_version
        self._interval = config.version_warning_interval
        self._clock = clock
        self._throttle = WarningThrottle(config.version_warning_interval, clock)

    def speaks(self, server: Server) -> bool:
        """True if the proxy can call ``server`` (unknown versions are assumed ok)."""
        return server.rpc_version == UNKNOWN_RPC_VERSION or server.rpc_version <= self._rpc_version

    def admit(self, servers: Iterable[Server], service: str = "") -> Admission:
        admitted: list[Server] = []
        skipped: list[Server] = []
        warnings: list[str] = []
        for server in servers:
            if self.speaks(server):
                admitted.append(server)
                continue
            skipped.append(server)
            if self._throttle.allow(server.address):
                where = f" for {service}" if service else ""
                warnings.append(
                    f"skipping server {server.address} (replica {server.replica or '?'})"
                    f"{where}: it speaks rpc version {server.rpc_version}, "
                    f"this proxy speaks {self._rpc_version}"
                )
        # Entries older than the interval would fire anyway: dropping them keeps
        # the throttle as small as the set of servers seen in the last interval.
        self._throttle.forget_before(self._clock() - self._interval)
        return Admission(tuple(admitted), tuple(skipped), tuple(warnings))

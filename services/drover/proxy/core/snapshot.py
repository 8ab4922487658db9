"""Read-only views of the server lists, for ListServers and RebalanceServers.

Times are monotonic seconds of the proxy's clock; each snapshot carries
``taken_at`` so the shell converts them to wall-clock timestamps with one
``wall_now + (t - taken_at)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.proxy.core.server import Server


@dataclass(frozen=True)
class ServerStatus:
    server: Server
    healthy: bool
    #: Monotonic time of the last failed call or ping, None if never failed.
    last_failure: float | None
    leader: bool
    #: The server :meth:`ServerList.pick` would return now.
    in_use: bool


@dataclass(frozen=True)
class ServerListSnapshot:
    """One backend service's list, discovered servers first, then backups."""

    service: str
    servers: tuple[ServerStatus, ...]
    #: The effective leader (hint first) for leader-only services, else None.
    leader: str | None
    next_rebalance: float | None
    generation: int
    taken_at: float


@dataclass(frozen=True)
class ListsSnapshot:
    """Every requested list and the membership revision they reflect."""

    lists: tuple[ServerListSnapshot, ...]
    revision: int
    taken_at: float

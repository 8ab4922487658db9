"""The pure half of a rebalance: a plan to ping in, and what the pings mean.

Pinging is I/O, so a rebalance is split in two (see
:mod:`drover.proxy.core.server_list`): the list hands out a :class:`RebalancePlan`
(a shuffled copy of its discovered servers and the generation it came from),
the shell pings in plan order and reports :class:`PingResult` s, and
:func:`reorder` computes the new order as Nomad does: the first server that
answered leads, servers not pinged keep their shuffled place, and the
unreachable ones go to the back in the order they were pinged. No answer at
all means no new order: a list of unreachable servers is no better shuffled.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from drover.proxy.core.server import Server
from drover.proxy.errors import InvalidPingResults


@dataclass(frozen=True)
class RebalancePlan:
    """The order to ping in, bound to the list generation it was made from."""

    service: str
    order: tuple[Server, ...]
    generation: int
    started_at: float


@dataclass(frozen=True)
class PingResult:
    address: str
    healthy: bool


class RebalanceVerdict(enum.Enum):
    SAVED = "saved"
    NO_SERVERS = "no_servers"
    NO_HEALTHY_SERVER = "no_healthy_server"
    DISCOVERY_CHANGED = "discovery_changed"


@dataclass(frozen=True)
class RebalanceOutcome:
    verdict: RebalanceVerdict
    #: The list after the call (saved or not), discovered then backups.
    servers: tuple[Server, ...]
    message: str

    @property
    def saved(self) -> bool:
        return self.verdict is RebalanceVerdict.SAVED


def check_ping_order(plan: RebalancePlan, results: Sequence[PingResult]) -> None:
    """Results must name plan servers, each once, in plan order.

    A subsequence is fine: the pinger may stop at the first healthy server,
    or skip one it knows is gone.
    """
    position = {s.address: i for i, s in enumerate(plan.order)}
    last = -1
    for result in results:
        index = position.get(result.address)
        if index is None:
            raise InvalidPingResults(
                f"ping result for {result.address}, which is not in the plan",
                metadata={"address": result.address},
            )
        if index <= last:
            raise InvalidPingResults(
                f"ping result for {result.address} is out of plan order or repeated",
                metadata={"address": result.address},
            )
        last = index


def reorder(plan: RebalancePlan, results: Sequence[PingResult]) -> list[str] | None:
    """The new order of addresses, or None if no pinged server answered."""
    check_ping_order(plan, results)
    if not any(r.healthy for r in results):
        return None
    failed = [r.address for r in results if not r.healthy]
    failed_set = set(failed)
    return [s.address for s in plan.order if s.address not in failed_set] + failed

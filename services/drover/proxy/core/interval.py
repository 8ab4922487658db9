"""How often a proxy rebalances a server list, scaled with cluster size.

A rebalance opens a connection to (at least) one server. If every client of
a big cluster rebalanced every two minutes, the servers would drown in new
connections; so, as in Nomad, the interval is the larger of

* the minimum reuse time (``min_reuse``, 2 min) plus a random stagger of up
  to ``jitter_fraction`` of it (50%), so that clients started together
  spread out, and
* ``clients / (servers x new_conns_per_sec_per_server)`` seconds: the time
  the whole cluster needs to reconnect once within a budget of 64 new
  connections per second per server.

:func:`rebalance_interval` is the pure rule; :class:`RebalanceScheduler`
turns it into the next deadline on an injected monotonic clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from drover.errors import InvalidArgument
from drover.proxy.config import ProxyConfig


def rate_scaled_interval(rate: float, minimum: float, n: int) -> float:
    """Seconds for ``n`` operations at ``rate`` per second, never below ``minimum``.

    A rate of zero or less (no servers to connect to) yields ``minimum``.
    """
    if rate <= 0:
        return minimum
    return max(minimum, n / rate)


def rebalance_interval(
    num_clients: int, num_servers: int, config: ProxyConfig, rng: random.Random
) -> float:
    """The delay until the next rebalance, in seconds (jitter from ``rng``)."""
    if num_clients < 0 or num_servers < 0:
        raise InvalidArgument(
            f"cluster size must not be negative: clients={num_clients}, servers={num_servers}"
        )
    # rng.random() is in [0, 1): the stagger is in [0, min_reuse * fraction).
    stagger = rng.random() * config.min_reuse * config.jitter_fraction
    low_water_mark = config.min_reuse + stagger
    rate = num_servers * config.new_conns_per_sec_per_server
    return rate_scaled_interval(rate, low_water_mark, num_clients)


class RebalanceScheduler:
    """Keeps the next rebalance deadline of one server list.

    Not thread-safe; the async shell calls it from one event loop.
    """

    def __init__(self, config: ProxyConfig, clock: Callable[[], float], rng: random.Random) -> None:
        self._config = config
        self._clock = clock
        self._rng = rng
        self._next_at: float | None = None

    @property
    def next_at(self) -> float | None:
        """The monotonic time of the next rebalance, or None if never scheduled."""
        return self._next_at

    def schedule(self, num_clients: int, num_servers: int) -> float:
        """Set and return the next deadline, counted from now."""
        delay = rebalance_interval(num_clients, num_servers, self._config, self._rng)
        self._next_at = self._clock() + delay
        return self._next_at

    def due(self) -> bool:
        """True when a rebalance is scheduled and its time has come."""
        return self._next_at is not None and self._clock() >= self._next_at

    def remaining(self) -> float | None:
        """Seconds until the deadline (0 when due), or None if never scheduled."""
        if self._next_at is None:
            return None
        return max(0.0, self._next_at - self._clock())

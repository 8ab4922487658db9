"""Which etcd endpoint to use: health marks, a per-process random order, and
when to probe. Pure: no asyncio, no gRPC; ``now`` is passed in.

The async shell (:mod:`drover.coord.pool`) feeds it what it sees: probe
answers (a member that answers a Status with a known leader is good),
probe timeouts, requests that outlived a short bound, keepalive or watch
streams gone silent, a "no leader" error. It asks :meth:`EndpointHealth.current`
which endpoint to send new calls to and aborts the calls on an endpoint the
moment it turns bad, without waiting for a socket to close.

Rules (the why in brackets):

* every process shuffles the endpoint list once (so N processes spread over
  the members instead of all piling onto the first one);
* ``current`` is the first *good* endpoint in that order, so a process moves
  back to its preferred member once it recovers (rebalance);
* a bad mark holds for at least ``hold_down`` seconds and is cleared only by
  a good probe after that (a flapping member does not bounce the client);
* when every endpoint is bad the client stays where it is (an etcd leader
  election makes every member answer "no leader" for about a second;
  switching then would only restart streams for nothing), unless the one in
  use is bad and another, though still held down, has answered its latest
  probe well ("recovering"): then it moves there at once (a frozen etcd
  leader makes the others answer "no leader" until they elect a new one;
  waiting out their hold-down would add seconds to the failover);
* the endpoint in use is probed every ``probe_interval``, the others every
  ``idle_probe_interval``; a suspicion (slow request, silent stream) makes
  an endpoint due at once.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["EndpointHealth", "HealthConfig"]


@dataclass(frozen=True)
class HealthConfig:
    """Timing of endpoint health checks (seconds)."""

    #: Probe period of the endpoint in use.
    probe_interval: float = 0.25
    #: Probe period of the other endpoints (to notice a recovery).
    idle_probe_interval: float = 1.0
    #: A probe not answered within this marks the endpoint bad.
    probe_timeout: float = 0.5
    #: A request still unanswered after this makes its endpoint suspect (an
    #: immediate probe decides); the request itself keeps its own deadline.
    request_bound: float = 0.5
    #: A bad endpoint stays bad at least this long.
    hold_down: float = 2.0
    #: Closing the pool waits this long for its cancelled probes (``drover.tasks``).
    stop_timeout: float = 2.0

    def __post_init__(self) -> None:
        for name in ("probe_interval", "idle_probe_interval", "probe_timeout",
                     "request_bound", "hold_down", "stop_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


@dataclass
class _Mark:
    bad_since: float | None = None
    reason: str = ""
    last_ok: bool = True
    next_probe: float = -math.inf
    probing: bool = False


class EndpointHealth:
    """Health marks and the preferred order of a set of endpoints."""

    def __init__(self, endpoints: Sequence[str], *, rng: random.Random | None = None,
                 config: HealthConfig | None = None, shuffle: bool = True) -> None:
        if not endpoints:
            raise ValueError("at least one endpoint is required")
        if len(set(endpoints)) != len(endpoints):
            raise ValueError("endpoints must be distinct")
        self.config = config or HealthConfig()
        self.order = list(endpoints)
        self._rng = rng or random.Random()
        self._shuffle = shuffle
        if shuffle:  # off only for fault drills that pin every process to one member
            self._rng.shuffle(self.order)
        self._marks = {ep: _Mark() for ep in self.order}
        self.current = self.order[0]
        #: How many times ``current`` changed.
        self.switches = 0

    # -- queries -------------------------------------------------------------

    def good(self, ep: str) -> bool:
        return self._marks[ep].bad_since is None

    def recovering(self, ep: str) -> bool:
        """Held down, but its latest probe was answered well."""
        m = self._marks[ep]
        return m.bad_since is not None and m.last_ok

    def reason(self, ep: str) -> str:
        return self._marks[ep].reason

    def bad(self) -> list[str]:
        return [ep for ep in self.order if not self.good(ep)]

    def due(self, now: float) -> list[str]:
        """Endpoints to probe now (none already being probed)."""
        return [ep for ep in self.order
                if not self._marks[ep].probing and now >= self._marks[ep].next_probe]

    def next_due(self) -> float:
        """When the next probe falls due (``inf`` while all are in flight)."""
        times = [m.next_probe for m in self._marks.values() if not m.probing]
        return min(times, default=math.inf)

    # -- events --------------------------------------------------------------

    def probe_started(self, ep: str, now: float) -> None:
        self._marks[ep].probing = True

    def probe_ok(self, ep: str, now: float) -> str | None:
        """A good probe answer. Returns the new current endpoint if it changed."""
        m = self._marks[ep]
        m.probing = False
        m.next_probe = now + self._interval(ep)
        m.last_ok = True
        if m.bad_since is not None and now - m.bad_since >= self.config.hold_down:
            m.bad_since, m.reason = None, ""
        return self._choose()

    def probe_failed(self, ep: str, now: float, reason: str) -> str | None:
        m = self._marks[ep]
        m.probing = False
        m.next_probe = now + self._interval(ep)
        return self.mark_bad(ep, now, reason)

    def mark_bad(self, ep: str, now: float, reason: str) -> str | None:
        """``ep`` failed (probe, request, stream). Returns the new current
        endpoint if the client must move."""
        m = self._marks[ep]
        if m.bad_since is None:
            m.reason = reason
        m.bad_since = now
        m.last_ok = False  # the hold-down runs from the latest failure
        return self._choose()

    def suspect(self, ep: str, now: float) -> None:
        """Something on ``ep`` looks stuck: probe it as soon as possible."""
        self._marks[ep].next_probe = min(self._marks[ep].next_probe, now)

    def update(self, endpoints: Sequence[str], now: float) -> tuple[list[str], list[str]]:
        """The endpoint set changed (a hostname re-resolved): returns (added,
        removed). A new endpoint joins at a random place in the order, held
        down until its first good probe; a removed one is forgotten (if it was
        in use, ``current`` moves as after a failure). An empty set is
        ignored (a resolver outage must not leave the client with nothing)."""
        wanted = list(dict.fromkeys(endpoints))
        if not wanted:
            return [], []
        added = [ep for ep in wanted if ep not in self._marks]
        removed = [ep for ep in self.order if ep not in wanted]
        for ep in added:
            at = self._rng.randint(0, len(self.order)) if self._shuffle else len(self.order)
            self.order.insert(at, ep)
            self._marks[ep] = _Mark(bad_since=now - self.config.hold_down,
                                    reason="new endpoint, not probed yet", last_ok=False,
                                    next_probe=now)
        for ep in removed:
            self.order.remove(ep)
            del self._marks[ep]
        if self.current in removed:
            self.current = next((ep for ep in self.order if self.good(ep)),
                                next((ep for ep in self.order if self.recovering(ep)),
                                     self.order[0]))
            self.switches += 1
        return added, removed

    # -- internals -----------------------------------------------------------

    def _interval(self, ep: str) -> float:
        cfg = self.config
        return cfg.probe_interval if ep == self.current else cfg.idle_probe_interval

    def _choose(self) -> str | None:
        best = next((ep for ep in self.order if self.good(ep)), None)
        if best is None and not self.good(self.current) and not self.recovering(self.current):
            best = next((ep for ep in self.order if self.recovering(ep)), None)
        if best is None or best == self.current:
            return None  # all bad: stay; or already on the best one
        self.current = best
        self.switches += 1
        # The new current is probed at the fast rate from now on.
        m = self._marks[best]
        m.next_probe = min(m.next_probe, m.next_probe - self.config.idle_probe_interval
                           + self.config.probe_interval)
        return best

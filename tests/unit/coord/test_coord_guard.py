"""LeaderGuard: the synchronous lease-clock check every leader-only act makes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from virtual_clock import VirtualClock

from drover.coord import LeaderGuard, LeaseClock, Term
from drover.errors import NotLeader


class Scope:
    def __init__(self) -> None:
        self.lost: list[str] = []

    @property
    def ended(self) -> bool:
        return bool(self.lost)

    def spawn(self, coro: Any, *, name: str | None = None) -> Any:
        coro.close()

    def report_lost(self, reason: str) -> None:
        self.lost.append(reason)


class Lease:
    """A LeaseView on the pure lease clock (what a Session does)."""

    def __init__(self, clock: LeaseClock) -> None:
        self.clock = clock

    def safe(self, now: float) -> bool:
        return not self.clock.unsafe(now)


def _term(now: VirtualClock, ttl: float = 3.0) -> tuple[Term, Scope, LeaseClock]:
    scope, lease = Scope(), LeaseClock(ttl, granted_sent_at=now())
    term = Term("broker", "/drover/v1/election/broker/1", 7, 7, "10.0.0.1:1",
                scope=scope, lease=Lease(lease))
    return term, scope, lease


def test_the_term_serves_only_while_the_lease_clock_says_so() -> None:
    now = VirtualClock(100.0)
    guard = LeaderGuard("broker", clock=now, hint=lambda: "10.0.0.2:2")
    guard.address = "10.0.0.1:1"
    with pytest.raises(NotLeader):
        guard.check()  # never enabled
    term, scope, lease = _term(now)
    guard.enable(term)
    assert guard.check() is term
    now.now = 101.9  # TTL 3 x 2/3 = 2 s after the grant was sent
    assert guard.alive()
    lease.on_send(101.0)
    lease.on_reply(3, 101.95)  # renewed from the send time: safe until 103
    now.now = 102.9
    assert guard.alive() and not scope.lost
    now.now = 103.0  # frozen past it: refused at once, and the term is ended
    with pytest.raises(NotLeader) as caught:
        guard.check()
    assert caught.value.leader == "10.0.0.2:2"
    assert len(scope.lost) == 1 and "lease clock" in scope.lost[0]
    now.now = 100.0  # even if the clock looked fine again, an ended term stays over
    assert not guard.alive()
    guard.disable()
    assert guard.term is None


def test_a_refusal_never_names_this_replica_and_looks_the_leader_up() -> None:
    now = VirtualClock(0.0)
    observed = ["10.0.0.1:1"]  # a woken replica still "sees" itself leading
    guard = LeaderGuard("broker", clock=now, hint=lambda: observed[0])
    guard.address = "10.0.0.1:1"
    assert guard.not_leader().leader is None

    async def lookup() -> str | None:
        return "10.0.0.3:3"

    async def slow() -> str | None:
        await asyncio.sleep(10)
        return "never"

    async def main() -> None:
        assert (await guard.refusal()).leader is None  # no lookup configured
        guard.use_lookup(lookup)
        assert (await guard.refusal()).leader == "10.0.0.3:3"
        guard.use_lookup(slow)
        guard._lookup_timeout = 0.01
        assert (await guard.refusal()).leader is None  # bounded
        observed[0] = "10.0.0.4:4"
        assert (await guard.refusal()).leader == "10.0.0.4:4"  # observed: no lookup

    asyncio.run(main())

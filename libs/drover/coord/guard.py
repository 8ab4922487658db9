"""The leader guard: leader-only work proves its term alive right before acting.

Revocation is asynchronous: when a leader's lease runs out, the keepalive
task notices, the runner cancels leader work and the components revoke, each
a task that runs when the event loop gets to it. A process frozen past its
lease (SIGSTOP, a long GC pause, a stalled VM) wakes up with RPCs and timers
already queued, and whichever runs first would still find "a writer" and a
delivering broker. So "I hold a writer" is not the guard; this is:

* :meth:`LeaderGuard.check` (and :meth:`LeaderGuard.alive`) read the lease
  clock synchronously (last keepalive reply's send time + TTL x safety
  fraction, on the monotonic clock, :class:`drover.coord.session.LeaseClock`)
  and the term's end flag. The caller acts in the same synchronous stretch
  (no ``await`` between the check and the act), so a term that is not
  provably alive serves nothing. A failed check also ends the term at once
  (``Term.report_lost``), so revocation starts without waiting for the
  keepalive task.
* A refusal is :class:`drover.errors.NotLeader` (UNAVAILABLE) with the
  ``drover-leader`` hint: the leader address the service last observed, or
  (:meth:`LeaderGuard.refusal`, async, bounded) a fresh read of the
  election when the observation is stale (it still names this replica,
  or nobody).

One contract for every leader-only service: ``enable(term)`` from the
component's ``establish``, ``disable()`` from its ``revoke``. Between the
two, :attr:`term` is the term to act for.

The check cannot cover a freeze *between* it and the reply leaving the
process; fencing does (writes carry the term; delivery tokens carry it too).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from drover.coord.clock import Clock, monotonic
from drover.coord.term import Term
from drover.errors import NotLeader

__all__ = ["LeaderGuard"]

log = logging.getLogger(__name__)

#: The current leader for a hint: its address, or (address, term).
Lookup = Callable[[], Awaitable[str | tuple[str, int] | None]]


class LeaderGuard:
    """Whether this replica may act as ``service``'s leader, right now."""

    def __init__(
        self,
        service: str,
        *,
        clock: Clock = monotonic,
        hint: Callable[[], str | None] | None = None,
        hint_term: Callable[[], int] | None = None,
        lookup: Lookup | None = None,
        lookup_timeout: float = 1.0,
    ) -> None:
        self.service = service
        # This replica's own address (set once the server listens): never a hint.
        self.address = ""
        self._clock = clock
        self._hint = hint or (lambda: None)
        self._hint_term = hint_term or (lambda: 0)
        self._lookup = lookup
        self._lookup_timeout = lookup_timeout
        self._term: Term | None = None
        self.refused = 0

    # -- the enable/disable contract ---------------------------------------------

    def enable(self, term: Term) -> None:
        self._term = term

    def disable(self) -> None:
        self._term = None

    @property
    def term(self) -> Term | None:
        """The enabled term (maybe no longer alive: ask :meth:`alive`)."""
        return self._term

    def use_lookup(self, lookup: Lookup | None) -> None:
        """How to find the current leader when the observed one is stale."""
        self._lookup = lookup

    # -- synchronous checks ----------------------------------------------------------

    def alive(self) -> bool:
        """True when the enabled term is provably alive now (synchronous)."""
        term = self._term
        if term is None:
            return False
        if term.alive(self._clock()):
            return True
        if not term.ended:
            log.warning("%s: term %d is past its lease clock; serving nothing and stepping "
                        "down", self.service, term.revision)
            term.report_lost("the lease clock ran out (no keepalive reply in time)")
        return False

    def check(self) -> Term:
        """The term to act for; raises :class:`NotLeader` when it is not alive."""
        if not self.alive():
            self.refused += 1
            raise self.not_leader()
        term = self._term
        assert term is not None
        return term

    def not_leader(self) -> NotLeader:
        """The refusal, with the leader this replica last observed (never itself)."""
        hint = self._hint()
        if not hint or hint == self.address:
            return NotLeader(self.service, None)
        return NotLeader(self.service, hint, self._hint_term())

    # -- async refusal with a fresh hint -------------------------------------------

    async def refusal(self, err: NotLeader | None = None) -> NotLeader:
        """``err`` (default :meth:`not_leader`), with a hint looked up if it has none.

        A replica woken from a freeze still "observes" itself as leader: its
        election watch has not caught up. One bounded read of the election
        names the real leader, so the caller is not told "no leader is
        known" while one is.
        """
        err = err or self.not_leader()
        if err.leader is not None or self._lookup is None:
            return err
        try:
            async with asyncio.timeout(self._lookup_timeout):
                leader = await self._lookup()
        except Exception as e:  # a hint is best effort; the refusal stands
            log.debug("%s: leader lookup for a hint failed: %r", self.service, e)
            return err
        term = 0
        if isinstance(leader, tuple):
            leader, term = leader
        if leader and leader != self.address:
            return NotLeader(self.service, leader, term)
        return err

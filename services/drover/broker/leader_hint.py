"""The leader to advertise, and the end of open polls when this replica steps down.

:class:`LeaderHints` holds what the election observer (the app) last
reported: who holds the election key (``elected_address``) and whether it
has established. A hint (the ``drover-leader`` metadata of a NotLeader, see
:class:`~drover.coord.guard.LeaderGuard`) names a leader only once it has
established, so a client is never sent to a leader still restoring (it
would bounce); ``elected_address`` names it at once, so a Dequeue reaching
the freshly elected replica can wait for it to serve instead.

On a step-down (``revoke``) the open long polls end with the next leader's
address once the observer reports it, waiting at most ``hint_wait``; past
that they end NotLeader without a hint (the caller then looks the election
up afresh). If this replica leads again meanwhile, they stay open: they are
its polls again. On shutdown :meth:`drain_polls` ends every one, bounded.

Invariant: every parked poll is ended (a delivery, a timeout or an error)
by a bounded wait; nothing here waits without a deadline.

Async shell: futures and events of the running loop; no core state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from drover.broker.long_poll import LongPolls
from drover.errors import NotLeader
from drover.tasks import cancel_and_wait

__all__ = ["LeaderHints"]

# How much longer than ``hint_wait`` a shutdown waits for polls still ending.
_DRAIN_SLACK = 0.5


class LeaderHints:
    def __init__(
        self,
        polls: LongPolls,
        *,
        own_address: Callable[[], str],
        leading: Callable[[], bool],
        not_leader: Callable[[], NotLeader],
        hint_wait: float,
    ) -> None:
        self._polls = polls
        self._own_address = own_address
        # Whether this replica serves a term (has its writer) right now.
        self._leading = leading
        self._not_leader = not_leader
        self._hint_wait = hint_wait
        #: The leader to advertise: elected *and established* (serving).
        self.leader_address: str | None = None
        self.leader_term = 0
        #: Who holds the election key, established or not.
        self.elected_address: str | None = None
        self._leader_seen = asyncio.Event()
        self._ending: asyncio.Future[None] | None = None

    def observed(self, address: str | None, term: int, established: bool) -> None:
        """The election observer saw ``address`` lead (None: nobody) in
        ``term``; hints name it only once it has ``established``."""
        self.elected_address = address
        self.leader_address = address if established else None
        self.leader_term = term if established and address else 0
        self._leader_seen.set()
        self._leader_seen = asyncio.Event()

    def stepped_down(self) -> None:
        """This replica's term ended: end its open polls, with a hint if one
        comes within ``hint_wait`` (in the background: revoke does not wait)."""
        if len(self._polls):
            self._ending = asyncio.ensure_future(self._end_polls())

    async def drain_polls(self) -> None:
        """Shutdown: end every open poll (with a hint if one comes in time)."""
        ending = self._ending
        if ending is not None:
            # Not a deadline around `await ending`: its cancel would go into
            # the task, and one that swallowed it would hold the shutdown.
            await asyncio.wait({ending}, timeout=self._hint_wait)
            await cancel_and_wait((ending,), within=_DRAIN_SLACK, what="broker poll drain")
        self._polls.fail_all(self._not_leader())

    async def _end_polls(self) -> None:
        """End open polls with the next leader's address once it is known (bounded)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._hint_wait):
                while (self.leader_address in (None, self._own_address())
                       and not self._leading()):
                    await self._leader_seen.wait()
        if not self._leading():
            self._polls.fail_all(self._not_leader())

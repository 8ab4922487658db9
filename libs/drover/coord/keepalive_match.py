"""The pure core of the shared keepalive stream
(:mod:`drover.coord.keepalive_mux`): which waiting caller a
LeaseKeepAlive reply answers.

Many leases share one stream, so replies are matched to callers by lease ID.
Within one ID they are matched by count: etcd answers every request of a
LeaseKeepAlive stream, one at a time and in order (a lease that is gone is
answered with TTL 0; any other failure ends the stream), so the n-th reply
for a lease on a stream answers the n-th request for it. A caller's request
is numbered when it is registered (:meth:`PendingKeepAlives.add`, just
before the request is queued); it takes the first reply whose number is at
least its own. Several callers of one lease in flight each send a request
and each gets the reply to its own: never a reply to a request sent before
it asked, so the TTL it is told holds from a renewal made after its call
began.

A caller that gives up (its bound, its cancel) is dropped
(:meth:`PendingKeepAlives.drop`) but its request stays counted: its reply
still comes and then answers no one. A reply for an ID with nothing
outstanding (none is expected) answers no one either. :meth:`clear` hands
back every waiter when the stream ends: the table belongs to one stream and
is thrown away with it.

No I/O, no asyncio: a waiter is any object (the shell's futures).
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

__all__ = ["PendingKeepAlives"]

W = TypeVar("W")


class _Lease(Generic[W]):
    __slots__ = ("answered", "sent", "waiters")

    def __init__(self) -> None:
        self.sent = 0
        self.answered = 0
        #: (number of the request this waiter needs answered, waiter), in order.
        self.waiters: deque[tuple[int, W]] = deque()


class PendingKeepAlives(Generic[W]):
    """Keepalive requests sent on one stream and the callers waiting on them."""

    __slots__ = ("_leases", "_waiting")

    def __init__(self) -> None:
        self._leases: dict[int, _Lease[W]] = {}
        self._waiting = 0

    def __len__(self) -> int:
        """Callers waiting."""
        return self._waiting

    def outstanding(self) -> int:
        """Requests sent and not answered yet (waited on or not)."""
        return sum(e.sent - e.answered for e in self._leases.values())

    def add(self, lease: int, waiter: W) -> None:
        """``waiter`` sends a keepalive of ``lease`` now (the request is
        queued right after, in the same step)."""
        entry = self._leases.get(lease)
        if entry is None:
            entry = self._leases[lease] = _Lease()
        entry.sent += 1
        entry.waiters.append((entry.sent, waiter))
        self._waiting += 1

    def answer(self, lease: int) -> list[W]:
        """A reply for ``lease`` came: the waiters it answers (removed)."""
        entry = self._leases.get(lease)
        if entry is None:
            return []
        entry.answered += 1
        done: list[W] = []
        waiters = entry.waiters
        while waiters and waiters[0][0] <= entry.answered:
            done.append(waiters.popleft()[1])
        self._waiting -= len(done)
        if entry.answered >= entry.sent:  # nothing outstanding: no waiter left either
            del self._leases[lease]
        return done

    def drop(self, lease: int, waiter: W) -> bool:
        """``waiter`` no longer waits (its request stays counted); whether it was."""
        entry = self._leases.get(lease)
        if entry is None:
            return False
        for i, (_, w) in enumerate(entry.waiters):
            if w is waiter:
                del entry.waiters[i]
                self._waiting -= 1
                return True
        return False

    def clear(self) -> list[W]:
        """Every waiter (the stream ended), in the order they were added per
        lease; the table is empty after."""
        out = [w for entry in self._leases.values() for _, w in entry.waiters]
        self._leases.clear()
        self._waiting = 0
        return out

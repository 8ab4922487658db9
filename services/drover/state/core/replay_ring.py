"""The replay ring: the recent changes a Subscribe resume is served from.

A stream that resumes from an index (a client moving to another replica,
the broker's and the watcher's feeds after a stall) is sent the changes
after it. Recent ones come from this ring, in memory; older ones are read
from etcd's history (:mod:`drover.state.subscribe`), so the ring's size
changes what a resume costs, never what it gets.

Guarantee: every change after :attr:`ReplayRing.floor` is in the ring, in
revision order, and a revision is either wholly in it or wholly gone.

Bounds: the changes of the last ``window`` seconds, and at most ``limit``
of them, whichever is less. The window is what makes the ring's memory a
*plateau* that a fresh replica reaches within ``window`` seconds, whatever
the change rate: bounded by count alone (20 000), a replica at the soak's
quieter rates took 15 to 35 minutes to fill it, so a restarted replica's
memory climbed for half an hour (the one-hour soak of 29 Nov, state-1 after
its kill -9) and could not be told from a leak. A resume comes within
seconds of the stall that caused it (the proxy's hold, a stream's
heartbeat), well inside the default window of 60 s.

Pure: the clock is the caller's (``now`` on every append), nothing here
waits or does I/O.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar


class _Revisioned(Protocol):
    @property
    def revision(self) -> int: ...


C = TypeVar("C", bound=_Revisioned)


class ReplayRing(Generic[C]):
    """The changes after :attr:`floor`, of the last ``window`` seconds and
    at most ``limit`` of them."""

    def __init__(self, floor: int, *, limit: int, window: float) -> None:
        self.floor = floor
        self.limit, self.window = limit, window
        self._changes: collections.deque[C] = collections.deque()
        # (appended at, revision) per append, oldest first: what the window trims.
        self._appends: collections.deque[tuple[float, int]] = collections.deque()

    def __len__(self) -> int:
        return len(self._changes)

    def append(self, revision: int, changes: Sequence[C], now: float) -> None:
        """Add one applied revision's changes (``now``: the caller's clock),
        then trim to the bounds."""
        self._changes.extend(changes)
        self._appends.append((now, revision))
        appends = self._appends
        while appends and appends[0][0] < now - self.window:
            self.floor = max(self.floor, appends.popleft()[1])
        ring = self._changes
        while len(ring) > self.limit:
            self.floor = max(self.floor, ring.popleft().revision)
        # A revision may straddle the count's trim point: drop its remains too.
        while ring and ring[0].revision <= self.floor:
            ring.popleft()
        while appends and appends[0][1] <= self.floor:
            appends.popleft()

    def since(self, start: int, upto: int) -> list[C] | None:
        """The changes with ``start < revision <= upto``; None when some of
        them may be gone (``start`` below the floor: read etcd's history)."""
        if start < self.floor:
            return None
        return [c for c in self._changes if start < c.revision <= upto]

    def reset(self, revision: int) -> None:
        """Empty the ring: nothing up to ``revision`` is in it (a re-list)."""
        self._changes.clear()
        self._appends.clear()
        self.floor = revision

"""A cyclic-GC policy for a process whose big heap is not garbage.

The state service's cache and every broker replica hold what they serve
for as long as it lives: up to a million evaluations, each a few
GC-tracked containers (entries, keys, records, protos, heap tuples) that
form no reference cycles and die by reference counting. With CPython's
defaults (a young collection every 700 net allocations) the objects of one
watched batch or one request are walked by young collections, promoted,
and walked again by every full collection, which the growing old
generation triggers ever more often. Measured on the broker's batched
pipeline: the collector took ~12 % of the state's CPU, ~15 % of a broker
leader's and ~30 % of a follower's, and never found anything to free.

So a :class:`GcPolicy`:

* raises the young threshold to ``young_threshold`` when the process
  starts serving (never lowers it): objects of a request in flight are not
  promoted just for being alive when the 700th allocation happens;
* after a load (a list or restore) of at least ``freeze_min_restore``
  objects, :func:`gc.freeze` moves everything alive to the permanent
  generation (no collection: the load made next to no garbage, and a
  collection would walk all of it), so full collections walk only what
  arrives since;
* then every ``freeze_every`` applied events, one full collection and a
  freeze: the collection walks only what arrived since the last freeze
  (the rest is frozen) and frees the cycles that became garbage meanwhile.
  A frozen object is still freed by reference counting, but a *cycle*
  frozen is never collected (until a re-list's unfreeze, or a restart), and
  a serving process makes cyclic garbage all the time: every error
  answered (the exception, its traceback, the frames), asyncio's callbacks.
  Freezing without collecting first kept all of it: the state replicas'
  RSS grew 1.2-1.6 MiB/min for as long as each lived (one-hour soak,
  29 Nov), and tracemalloc saw the objects made by asyncio's callbacks and
  the error path grow in every dump (+58 000 and +2 700 in 4 minutes).
  The 240k-evaluation benchmark that had measured no growth made no errors.

Process-wide, so only a process's app (or the state cache it owns) enables
it; unit tests leave the collector alone. Not a correctness concern either
way: nothing here changes what a service decides.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass

__all__ = ["GcPolicy", "GcPolicyConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GcPolicyConfig:
    #: The young generation's threshold at least (0 leaves it).
    young_threshold: int = 5000
    #: Freeze after this many applied events (0: never).
    freeze_every: int = 50_000
    #: A list or restore of at least this many objects is frozen at once.
    freeze_min_restore: int = 10_000


class GcPolicy:
    """Counts what the process took in and freezes it now and then."""

    __slots__ = ("_since_freeze", "config", "freezes", "longest_pause")

    def __init__(self, config: GcPolicyConfig | None = None) -> None:
        self.config = config or GcPolicyConfig()
        self._since_freeze = 0
        self.freezes = 0
        #: The longest periodic collection and freeze so far, in seconds:
        #: the process does nothing else meanwhile.
        self.longest_pause = 0.0

    def start(self) -> None:
        """Raise the young threshold (process start)."""
        young, *older = gc.get_threshold()
        if self.config.young_threshold > young:
            gc.set_threshold(self.config.young_threshold, *older)

    def restored(self, held: int) -> None:
        """A list or restore built ``held`` objects: freeze them if many."""
        if held >= self.config.freeze_min_restore:
            self._freeze(collect=False)

    def applied(self, events: int) -> None:
        """``events`` watched or fed events were applied."""
        every = self.config.freeze_every
        if not every:
            return
        self._since_freeze += events
        if self._since_freeze >= every:
            self._freeze(collect=True)

    def _freeze(self, *, collect: bool) -> None:
        self._since_freeze = 0
        self.freezes += 1
        if not collect:
            gc.freeze()
            return
        start = time.perf_counter()
        freed = gc.collect()  # the garbage cycles since the last freeze, before they are frozen
        gc.freeze()
        pause = time.perf_counter() - start
        self.longest_pause = max(self.longest_pause, pause)
        log.info("gc: periodic collection freed %d objects and froze the rest in %.1f ms "
                 "(%d frozen; longest so far %.1f ms)", freed, pause * 1e3,
                 gc.get_freeze_count(), self.longest_pause * 1e3)

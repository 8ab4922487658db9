"""The broker process's cyclic-GC policy: what it holds is not garbage.

Every replica holds every non-terminal evaluation (a leader delivers them,
a follower is the hot standby): thousands to a million records, their
protos and heap entries, each alive for as long as the evaluation waits.
With CPython's defaults (a young collection every 700 net allocations) the
records built by one Subscribe batch are walked by young collections,
promoted, and walked again by every full collection, which the growing
old generation triggers ever more often: measured on the batched
pipeline, ~30 % of a follower's CPU and ~15 % of a leader's went to the
collector, which never found anything to free (records, job entries and
heap tuples hold no reference cycles: they die by reference counting).

So, as the state service's cache does (:mod:`drover.state.cache`):

* the young threshold is raised to ``young_threshold`` when the broker
  starts (never lowered): objects of a request in flight are not promoted
  just for being alive when the 700th allocation happens;
* after a restore and then every ``freeze_every`` applied events,
  :func:`gc.freeze` moves everything alive to the permanent generation
  (no collection: it costs nothing), so full collections walk only what
  arrived since. A frozen object is still freed by reference counting; only
  a cycle among frozen objects would wait for a restart: the broker's
  records make none, and what else is frozen is what happened to be in
  flight at a freeze (measured: no RSS growth over 240k evaluations of the
  batched pipeline). Without the periodic freeze a follower holding a
  backlog spent ~30 % of its CPU in the collector again.

Process-wide, so only the process's app enables it (the runtime takes it
as an option; unit tests leave the collector alone). Not a correctness
concern either way: nothing here changes what the broker decides.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

__all__ = ["GcPolicy", "GcPolicyConfig"]


@dataclass(frozen=True, slots=True)
class GcPolicyConfig:
    #: The young generation's threshold at least (0 leaves it).
    young_threshold: int = 5000
    #: Freeze after this many applied evaluation events (0: never).
    freeze_every: int = 50_000
    #: A restore of at least this many evaluations is frozen at once.
    freeze_min_restore: int = 10_000


class GcPolicy:
    """Counts what the broker took in and freezes it now and then."""

    __slots__ = ("_since_freeze", "config", "freezes")

    def __init__(self, config: GcPolicyConfig | None = None) -> None:
        self.config = config or GcPolicyConfig()
        self._since_freeze = 0
        self.freezes = 0

    def start(self) -> None:
        """Raise the young threshold (process start)."""
        young, *older = gc.get_threshold()
        if self.config.young_threshold > young:
            gc.set_threshold(self.config.young_threshold, *older)

    def restored(self, held: int) -> None:
        """A restore built ``held`` records: freeze them if many."""
        if held >= self.config.freeze_min_restore:
            self._freeze()

    def applied(self, events: int) -> None:
        """``events`` evaluation events were applied."""
        every = self.config.freeze_every
        if not every:
            return
        self._since_freeze += events
        if self._since_freeze >= every:
            self._freeze()

    def _freeze(self) -> None:
        self._since_freeze = 0
        self.freezes += 1
        gc.freeze()

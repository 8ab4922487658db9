"""How current a server's ACL view is, and the down policy (pure).

Default deny must hold when the ACL data goes stale. The view (an
:class:`~drover.acl.tokens.AclState` fed by an etcd watch) is judged only
while it is *known* current: this module keeps the time it was last proven
so and refuses, past :attr:`AclSettings.max_stale`, every call that needs a
capability (:class:`~drover.acl.errors.AclDataStale`, UNAVAILABLE) unless
the down policy is ``extend-cache``. It recovers by itself: the next proof
marks the view current again.

**What counts as proof** (:func:`proves_current`). A watch that has gone
quiet looks exactly like an ACL keyspace nobody changed, and events that
do arrive may be old (a slow stream), so neither is proof. Proof is a
*linearizable read* started at time ``t0`` that shows the view held every
ACL change up to the read's revision ``H``: one small range of the ACL
prefix giving ``H``, the number of keys ``count`` and the newest
``mod_revision`` among them. With the view exactly etcd's content at its
applied revision ``a`` (the watch applies whole revisions, in order),
the view equals etcd's content at ``H`` when

* ``a >= H``: the view has applied every revision up to ``H``; or
* ``newest <= a`` and ``count == len(view keys)``: every key present at
  ``H`` was last written at or before ``a`` (so it is in the view, with the
  same value), and the view holds no other key (a delete after ``a`` would
  leave it one key more). ``a`` never passes ``H`` in this case, or the
  first rule holds.

Either way the view was current at ``t0`` (the read began before it was
linearized), so ``t0``, not the read's end, is recorded: a slow read only
ever makes the view look older. The rule can be checked again whenever the
watch applies more; it stays true once true for a given read.

The server identity is not judged with this view (its secret derives from
the cluster secret, not from tokens or policies), so servers keep calling
each other while a view is stale; the shell decides that, not this module.

Invariants: staleness never decreases except by a proof; a proof is never
dated after the read that made it started; ``deny`` refuses strictly past
``max_stale``, so a view proven every ``check_interval`` with reads under
``check_timeout`` never refuses (their sum is below ``max_stale``).
"""

from __future__ import annotations

from drover.acl.errors import AclDataStale
from drover.config import AclSettings
from drover.coord.clock import Clock

__all__ = ["EXTEND_CACHE", "Freshness", "proves_current"]

EXTEND_CACHE = "extend-cache"


def proves_current(*, applied: int, view_keys: int, read_revision: int, newest: int,
                   count: int) -> bool:
    """Whether a linearizable read of the ACL prefix (at ``read_revision``,
    ``count`` keys, the newest written at ``newest``; 0 for none) proves a
    view that has applied revision ``applied`` and holds ``view_keys`` keys
    held every ACL change the read saw (see the module docstring)."""
    if applied >= read_revision:
        return True
    return newest <= applied and count == view_keys


class Freshness:
    """When the ACL view was last proven current, judged against the bound.

    ``clock`` is monotonic seconds. Until the first proof, staleness counts
    from construction (the shell builds this before its first listing)."""

    def __init__(self, settings: AclSettings, clock: Clock) -> None:
        self.settings = settings
        self._clock = clock
        self._born = clock()
        self._current_at: float | None = None

    @property
    def current_at(self) -> float | None:
        """The start time of the last read that proved the view current."""
        return self._current_at

    def mark_current(self, as_of: float) -> None:
        """A read started at ``as_of`` proved the view current. An older
        proof arriving late (reads overlap) never moves the mark back."""
        if self._current_at is None or as_of > self._current_at:
            self._current_at = as_of

    def staleness(self) -> float:
        """Seconds since the view was last proven current (since construction
        while never proven)."""
        since = self._current_at if self._current_at is not None else self._born
        return max(0.0, self._clock() - since)

    @property
    def stale(self) -> bool:
        return self.staleness() > self.settings.max_stale

    @property
    def extends_cache(self) -> bool:
        return self.settings.down_policy == EXTEND_CACHE

    def refusal(self) -> AclDataStale | None:
        """The error to answer a call that needs a capability with, or None
        to judge it with the view (fresh, or stale under ``extend-cache``)."""
        age = self.staleness()
        bound = self.settings.max_stale
        if age <= bound or self.extends_cache:
            return None
        return AclDataStale(
            f"access control data is stale: this server's view of ACL tokens and policies "
            f"was last confirmed current with etcd {age:.0f}s ago (bound {bound:g}s), so calls "
            f"that need a capability are refused (ACL down policy 'deny'). Fix: restore this "
            f"server's connection to etcd (is etcd up and reachable from here?); it serves "
            f"again by itself once its view catches up. Retry later, or, to keep serving "
            f"from the cached view during etcd outages at the cost of revocations not taking "
            f"effect, set --acl-down-policy=extend-cache.",
            metadata={"staleness_seconds": f"{age:.1f}", "max_stale_seconds": f"{bound:g}"})

"""A stale read's bound: Consul's ``max_stale`` (pure: no I/O, clock passed in).

``QueryOptions.stale`` serves a read from the replica's cache at once, and
QueryMeta's ``last_contact`` says how old that cache may be. ``max_stale``
lets the caller bound it on the server, as Consul's ``?max_stale=``: a
stale read is served only while the replica heard from etcd within the
bound. Setting ``max_stale`` implies ``stale`` (as Consul's does).

Contact comes from any successful etcd call, so a healthy but idle replica
(no watch traffic) may look older than the bound. Past it the replica does
not refuse at once: one consistent read (bounded by the cache's marker
timeout) proves contact, and the read is served from the caught-up cache;
only when that fails is it refused. Hence :func:`decide` says *serve* or
*prove*, and :func:`refusal` is the error once the proof failed.

The refusal is UNAVAILABLE ``STALE_READ_BOUND`` -- the replica, not the
request, is at fault -- so the proxy and the CLI (reads retry on
UNAVAILABLE) move to another replica. Its ErrorInfo metadata gives the
replica's ``last_contact`` and the ``max_stale`` asked, in seconds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from drover.errors import InvalidArgument
from drover.state.errors import StaleReadBound

__all__ = ["Bound", "Verdict", "bound_of", "decide", "refusal"]


class Verdict(enum.Enum):
    #: Serve from the cache as it is.
    SERVE = "serve"
    #: Catch up first (a consistent read); refuse if that fails.
    PROVE = "prove"


@dataclass(frozen=True)
class Bound:
    """What a read asked: ``stale`` (serve from the cache) and ``max_stale``
    (seconds; 0: no bound)."""

    stale: bool
    max_stale: float = 0.0


def bound_of(stale: bool, max_stale: float) -> Bound:
    """The request's bound; INVALID_ARGUMENT for a negative ``max_stale``.
    A positive ``max_stale`` implies ``stale``."""
    if max_stale < 0:
        raise InvalidArgument(f"max_stale must not be negative (got {max_stale:g}s)",
                              metadata={"field": "query.max_stale"})
    return Bound(stale=stale or max_stale > 0, max_stale=max_stale)


def decide(bound: Bound, last_contact: float) -> Verdict:
    """Whether a stale read may be served now, ``last_contact`` seconds
    after the replica last heard from etcd. A consistent read (not stale)
    always proves: it catches up before answering."""
    if not bound.stale:
        return Verdict.PROVE
    if bound.max_stale <= 0 or last_contact <= bound.max_stale:
        return Verdict.SERVE
    return Verdict.PROVE


def refusal(bound: Bound, last_contact: float) -> StaleReadBound:
    """The error for a bounded stale read whose proof of contact failed."""
    return StaleReadBound(
        f"this state replica last heard from etcd {last_contact:.1f}s ago, past the read's "
        f"max_stale of {bound.max_stale:g}s; try another replica",
        metadata={"last_contact": f"{last_contact:.3f}", "max_stale": f"{bound.max_stale:g}"},
    )

"""The pure part of the convergence barrier (the router-mesh lesson).

Every proxy replica publishes, in its membership entry, the membership
revision it has applied to its server lists. A caller that changed the
cluster at revision R (added a server, moved a leader) may wait until every
*live* proxy replica has applied R before relying on it: then no replica
still routes by the old view. The shell re-evaluates :func:`convergence` on
every membership change until it converges or the caller's timeout ends,
and answers with the replicas still behind.

Only live replicas count (their membership key is bound to their lease): a
dead replica cannot route anything, and waiting for it would never end. No
live replica at all is vacuously converged. A replica is behind when its
applied revision is below the target.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from drover.proxy.errors import DuplicateReplica, InvalidRevision


@dataclass(frozen=True)
class ReplicaRevision:
    """One proxy replica's membership entry: who, where, and what it applied."""

    replica: str
    address: str
    applied_revision: int


@dataclass(frozen=True)
class Convergence:
    target: int
    converged: bool
    #: Every live replica, by name.
    replicas: tuple[ReplicaRevision, ...]
    #: The replicas below the target, furthest behind first.
    behind: tuple[ReplicaRevision, ...]


def convergence(entries: Iterable[ReplicaRevision], target: int) -> Convergence:
    """Whether every replica in ``entries`` has applied ``target``."""
    if target < 0:
        raise InvalidRevision(
            f"target revision must not be negative, got {target}",
            metadata={"revision": str(target)},
        )
    by_name: dict[str, ReplicaRevision] = {}
    for entry in entries:
        if entry.applied_revision < 0:
            raise InvalidRevision(
                f"replica {entry.replica} reports a negative revision {entry.applied_revision}",
                metadata={"replica": entry.replica, "revision": str(entry.applied_revision)},
            )
        if entry.replica in by_name:
            raise DuplicateReplica(
                f"replica {entry.replica!r} appears twice in membership",
                metadata={"replica": entry.replica},
            )
        by_name[entry.replica] = entry
    replicas = tuple(by_name[name] for name in sorted(by_name))
    behind = tuple(
        sorted(
            (r for r in replicas if r.applied_revision < target),
            key=lambda r: (r.applied_revision, r.replica),
        )
    )
    return Convergence(target, not behind, replicas, behind)

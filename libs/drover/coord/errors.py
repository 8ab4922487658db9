"""Errors of the coordination library, each a :mod:`drover.errors` subclass.

Named by cause, so a caller can act on the class: a lost session or an
unreachable etcd is UNAVAILABLE (retry elsewhere / later), a write whose
outcome is unknown is UNAVAILABLE with reason ``OUTCOME_UNKNOWN`` (it may have
been applied: retry only with the same ids), a malformed fence
header is INVALID_ARGUMENT, a compacted watch start is OUT_OF_RANGE (the
consumer must resync, like HTTP 410 Gone). :class:`drover.errors.FenceLost`
is reused as is for a failed fence compare.
"""

from __future__ import annotations

from drover.errors import (
    DroverError,
    FailedPrecondition,
    FenceLost,
    InvalidArgument,
    Kind,
    OutcomeUnknown,
    Unavailable,
)

__all__ = [
    "ClientClosed",
    "Compacted",
    "EstablishFailed",
    "EtcdOutcomeUnknown",
    "EtcdUnavailable",
    "FenceLost",
    "InvalidFence",
    "InvalidMember",
    "LeaseNotFound",
    "NotCandidate",
    "SessionLost",
    "WatchCompacted",
]


class EtcdUnavailable(Unavailable):
    """etcd did not answer (down, partitioned, frozen) within the deadline."""

    reason = "ETCD_UNAVAILABLE"


class ClientClosed(EtcdUnavailable):
    """The etcd client was closed: nothing sent through it can succeed again."""

    reason = "ETCD_CLIENT_CLOSED"


class EtcdOutcomeUnknown(OutcomeUnknown, EtcdUnavailable):
    """A write reached (or may have reached) etcd, but its answer did not come
    back (:class:`drover.errors.OutcomeUnknown`). A kind of
    :class:`EtcdUnavailable` too, so every handler of that one still applies."""


class SessionLost(Unavailable):
    """The session's lease expired, was revoked, or could not be renewed in time."""

    reason = "SESSION_LOST"


class NotCandidate(Unavailable):
    """Our election key vanished while campaigning (lease expired): not leader."""

    reason = "NOT_CANDIDATE"


class InvalidFence(InvalidArgument):
    """A ``drover-fence`` header value is not ``<leader_key>@<term>``."""

    reason = "INVALID_FENCE"


class InvalidMember(InvalidArgument):
    """A membership record could not be decoded."""

    reason = "INVALID_MEMBER"


class EstablishFailed(FailedPrecondition):
    """A leader component's ``establish`` raised or missed its deadline."""

    reason = "ESTABLISH_FAILED"


class Compacted(DroverError):
    """A read, watch or compaction asked for history etcd has compacted:
    the one "compacted" error of every KV (etcd's and the in-memory twin's).

    ``compact_revision`` is the oldest revision still kept when the backend
    says so (a watch does; a range or compact call does not: 0)."""

    kind = Kind.OUT_OF_RANGE
    reason = "COMPACTED"

    def __init__(self, compact_revision: int = 0) -> None:
        where = f"before revision {compact_revision} " if compact_revision else ""
        super().__init__(f"etcd history {where}is compacted")
        self.compact_revision = compact_revision


class LeaseNotFound(DroverError):
    """The lease has expired or was revoked (its keys are gone)."""

    kind = Kind.NOT_FOUND
    reason = "LEASE_NOT_FOUND"

    def __init__(self, lease: int = 0) -> None:
        super().__init__(f"etcd lease {lease:x} not found" if lease else "etcd lease not found")
        self.lease = lease


class WatchCompacted(Compacted):
    """The requested watch start revision was compacted away; resync."""

    reason = "WATCH_COMPACTED"

    def __init__(self, requested: int, compact_revision: int) -> None:
        super().__init__(compact_revision)
        self.message = f"revision {requested} is compacted (compact revision {compact_revision})"
        self.args = (self.message,)
        self.metadata = {"requested": str(requested), "compact_revision": str(compact_revision)}
        self.requested = requested

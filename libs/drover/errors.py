"""The one error root of drover's libraries and services.

Every error a caller can act on is a :class:`DroverError` subclass named by
its cause (``InvalidPageToken``, ``FenceLost``, ...). Each carries a *kind*
(what a gRPC status code would say), a machine-readable ``reason`` (the
google.rpc.ErrorInfo reason, UPPER_SNAKE) and optional ``metadata``. This
module is pure: it knows no gRPC. The single mapping from kind to gRPC status
lives in :mod:`drover.rpc.errors`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

DOMAIN = "drover"

#: How much of any value an error may echo (messages and ErrorInfo metadata
#: travel in trailing metadata, which gRPC caps at 8-16 KiB in total).
ECHO_LIMIT = 256


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, marked when cut: what an error
    may quote of a request, however long the request's value was."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 3)] + "..."


class Kind(enum.Enum):
    """What went wrong, in the vocabulary of gRPC status codes."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    UNAVAILABLE = "UNAVAILABLE"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    INTERNAL = "INTERNAL"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"


class DroverError(Exception):
    """Root of every drover error.

    Subclasses set ``kind`` and ``reason`` as class attributes; instances
    carry the human message and optional ErrorInfo metadata (string to
    string, e.g. ``{"field": "page_token"}``).
    """

    kind: Kind = Kind.INTERNAL
    reason: str = "INTERNAL"

    def __init__(self, message: str, *, metadata: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, reason={self.reason})"


class InvalidArgument(DroverError):
    kind = Kind.INVALID_ARGUMENT
    reason = "INVALID_ARGUMENT"


class NotFound(DroverError):
    kind = Kind.NOT_FOUND
    reason = "NOT_FOUND"


class AlreadyExists(DroverError):
    kind = Kind.ALREADY_EXISTS
    reason = "ALREADY_EXISTS"


class FailedPrecondition(DroverError):
    kind = Kind.FAILED_PRECONDITION
    reason = "FAILED_PRECONDITION"


class Conflict(DroverError):
    """An optimistic-concurrency compare failed; safe to re-read and retry."""

    kind = Kind.ABORTED
    reason = "CONFLICT"


class Unavailable(DroverError):
    kind = Kind.UNAVAILABLE
    reason = "UNAVAILABLE"


class OutcomeUnknown(Unavailable):
    """A write was sent and its answer never came: it may or may not have
    been applied. Never assume either way: repeat it only if it is
    idempotent by construction (same ids, compare-guarded), or read back
    whether it took effect. The base of each cause's class (etcd did not
    answer a txn, a proxy's or a hold's server went silent, a broker's write
    to the state service lost its reply); a decoded remote status with this
    reason is one too."""

    reason = "OUTCOME_UNKNOWN"


class NotLeader(Unavailable):
    """A leader-only call reached a follower; ``metadata['leader']`` hints,
    ``metadata['term']`` says which term that leader holds (a client that
    already knows a newer term ignores an older hint instead of bouncing)."""

    reason = "NOT_LEADER"

    def __init__(self, service: str, leader: str | None, term: int = 0) -> None:
        hint = f"; the leader is {leader}" if leader else "; no leader is known yet"
        metadata = {"leader": leader} if leader else None
        if metadata is not None and term:
            metadata["term"] = str(term)
        super().__init__(f"this {service} replica is not the leader{hint}", metadata=metadata)
        self.leader = leader
        self.term = term if leader else 0


class FenceLost(FailedPrecondition):
    """A leader write's fence compare failed: the writer is no longer leader."""

    reason = "FENCE_LOST"


class FenceRequired(FailedPrecondition):
    """A write only a leader may make arrived without a leader's fence."""

    reason = "FENCE_REQUIRED"


# -- an evaluation outcome the state service did not apply --------------------
# The wire contract of the state service's evaluation writes: state raises
# these, the broker receives them decoded (:mod:`drover.remote_errors`) and
# passes them on to the worker whose outcome it was. Nothing was written.


class EvaluationGone(NotFound):
    """An update names an evaluation that no longer exists (deleted, e.g.
    while a worker held it): the outcome is dropped."""

    reason = "EVALUATION_GONE"


class EvaluationChanged(FailedPrecondition):
    """An update's modify_index is not the evaluation's current one (it was
    superseded or cancelled since it was handed out)."""

    reason = "EVALUATION_CHANGED"


class EvaluationExists(AlreadyExists):
    """A create (e.g. an Ack's follow-up) names an evaluation id that exists already."""

    reason = "EVALUATION_EXISTS"


class Internal(DroverError):
    kind = Kind.INTERNAL
    reason = "INTERNAL"

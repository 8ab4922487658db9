"""Inbound, the pure half: a decoded remote status back to a drover error.

:class:`RemoteStatus` is what a failed call to a drover service said (code
name, details, ErrorInfo reason and metadata, the ``drover-leader`` hint and
its term, whether a server answered at all). :func:`to_error` turns it into
the :class:`~drover.errors.DroverError` the server raised, as far as the
client can know it: the class for a reason it knows (``FENCE_LOST`` ->
:class:`~drover.errors.FenceLost`, ``NOT_LEADER`` ->
:class:`~drover.errors.NotLeader`), else the class of the status code's
kind, always with the remote reason and metadata kept, so ``err.reason ==
"INDEX_COMPACTED"`` reads the same on both sides. Codes with no drover kind
(CANCELLED, UNKNOWN, UNIMPLEMENTED, ...) are "that service is unusable now":
UNAVAILABLE. :func:`narrow` is how a service that calls another keeps only
the errors it acts on.

Pure (no gRPC): pure cores such as the proxy's failure classification read
a :class:`RemoteStatus`; :mod:`drover.rpc.remote` decodes one from a call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from drover.errors import (
    AlreadyExists,
    Conflict,
    DroverError,
    EvaluationChanged,
    EvaluationExists,
    EvaluationGone,
    FailedPrecondition,
    FenceLost,
    Internal,
    InvalidArgument,
    Kind,
    NotFound,
    NotLeader,
    OutcomeUnknown,
    Unavailable,
)

__all__ = [
    "LEADER_METADATA",
    "LEADER_TERM_METADATA",
    "RemoteError",
    "RemoteStatus",
    "narrow",
    "to_error",
]

LEADER_METADATA = "drover-leader"
#: The term (election key create_revision) of the hinted leader.
LEADER_TERM_METADATA = "drover-leader-term"


@dataclass(frozen=True)
class RemoteStatus:
    """A failed call, decoded once. ``code`` is the status code's name."""

    code: str
    details: str = ""
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    leader: str | None = None
    #: The term of the ``drover-leader`` hint (0: none, or not a number).
    leader_term: int = 0
    #: The server sent trailing metadata (ErrorInfo, a leader hint): it
    #: answered. False for failures of the transport itself.
    answered: bool = False


class RemoteError(DroverError):
    """A remote failure of a kind no drover class stands for; ``kind`` and
    ``reason`` are the remote's, per instance."""

    def __init__(self, kind: Kind, reason: str, message: str,
                 metadata: dict[str, str] | None = None) -> None:
        super().__init__(message, metadata=metadata)
        self.kind = kind
        self.reason = reason


_BY_REASON: dict[str, type[DroverError]] = {
    cls.reason: cls
    for cls in (FenceLost, Conflict, EvaluationGone, EvaluationChanged, EvaluationExists,
                OutcomeUnknown)
}
_BY_KIND: dict[Kind, Callable[[str, dict[str, str]], DroverError]] = {
    Kind.INVALID_ARGUMENT: lambda m, md: InvalidArgument(m, metadata=md),
    Kind.NOT_FOUND: lambda m, md: NotFound(m, metadata=md),
    Kind.ALREADY_EXISTS: lambda m, md: AlreadyExists(m, metadata=md),
    Kind.FAILED_PRECONDITION: lambda m, md: FailedPrecondition(m, metadata=md),
    Kind.ABORTED: lambda m, md: Conflict(m, metadata=md),
    Kind.UNAVAILABLE: lambda m, md: Unavailable(m, metadata=md),
    Kind.INTERNAL: lambda m, md: Internal(m, metadata=md),
}


def to_error(status: RemoteStatus) -> DroverError:
    """The drover error ``status`` stands for (pure)."""
    if status.reason == NotLeader.reason or (status.leader and status.code == "UNAVAILABLE"):
        leader = status.leader or status.metadata.get("leader")
        hinted = NotLeader(status.metadata.get("service", "remote"), leader)
        hinted.message = status.details or hinted.message
        return hinted
    known = _BY_REASON.get(status.reason)
    metadata = dict(status.metadata)
    if known is not None:
        return known(status.details, metadata=metadata)
    kind = Kind.__members__.get(status.code)
    if kind is None:  # CANCELLED, UNKNOWN, UNIMPLEMENTED, ...: unusable now
        err: DroverError = Unavailable(f"{status.code}: {status.details}", metadata=metadata)
    else:
        build = _BY_KIND.get(kind)
        err = (build(status.details, metadata) if build is not None
               else RemoteError(kind, status.reason or kind.name, status.details, metadata))
    if status.reason:
        err.reason = status.reason
    return err


def narrow(err: DroverError, acts_on: tuple[type[DroverError], ...], what: str) -> DroverError:
    """``err`` if the caller acts on its class, else :class:`Unavailable`
    (retry later) with the remote's reason in the metadata: how a service
    that calls another sees the errors it has no specific answer to."""
    if isinstance(err, acts_on):
        return err
    return Unavailable(f"{what}: {err.reason}: {err.message}",
                       metadata={**err.metadata, "remote_reason": err.reason})

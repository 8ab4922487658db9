"""Errors of the client proxy's core, each named by its cause.

They subclass the roots in :mod:`drover.errors`, so the one gRPC mapping in
:mod:`drover.rpc.errors` turns them into statuses with an ErrorInfo reason.
"""

from __future__ import annotations

from drover.errors import InvalidArgument, NotFound, OutcomeUnknown, Unavailable


class UnknownService(NotFound):
    """A request named a backend service the proxy keeps no list for."""

    reason = "UNKNOWN_SERVICE"


class InvalidRevision(InvalidArgument):
    """A membership revision was negative."""

    reason = "INVALID_REVISION"


class DuplicateReplica(InvalidArgument):
    """Membership entries named the same replica twice."""

    reason = "DUPLICATE_REPLICA"


class InvalidPingResults(InvalidArgument):
    """Rebalance ping results do not follow the plan they claim to answer.

    Results must name servers of the plan, each once, in the plan's order
    (a prefix of it when the pinger stopped at the first healthy server).
    """

    reason = "INVALID_PING_RESULTS"


class ForeignPlan(InvalidArgument):
    """A rebalance plan was handed to the list of another service."""

    reason = "FOREIGN_PLAN"


class InvalidServer(InvalidArgument):
    """A server record is malformed (empty address, negative rpc version)."""

    reason = "INVALID_SERVER"


class InvalidTimeout(InvalidArgument):
    """A wait was asked for with a negative timeout."""

    reason = "INVALID_TIMEOUT"


class InvalidBackupServer(InvalidArgument):
    """A backup server entry is not ``service=host:port``."""

    reason = "INVALID_BACKUP_SERVER"


class NoServer(Unavailable):
    """The proxy knows no server it could forward a call for this service to."""

    reason = "NO_SERVER"


class ForwardOutcomeUnknown(OutcomeUnknown):
    """A forwarded write's attempt broke after the request may have reached
    the server (it stopped answering, left membership or the connection
    dropped): it may or may not have been applied. The proxy does not repeat
    it; the client may, if the write is idempotent or it checks first."""


class StreamEnded(Unavailable):
    """A resumable stream could not be resumed on any server within the
    caller's deadline; the client resubscribes from its last index."""

    reason = "STREAM_NOT_RESUMED"


class ServerStalled(Unavailable):
    """The server of a forwarded read stopped answering (or left membership)
    and no other server answered within the caller's deadline."""

    reason = "SERVER_STALLED"


class Retry(Exception):
    """An attempt failed in a way the next server (or the leader it named) may not."""

    def __init__(self, error: Exception, follow: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.follow = follow


class Final(Exception):
    """An attempt failed in a way no other server changes: relay ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error

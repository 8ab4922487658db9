"""Errors of the client proxy's core, each named by its cause.

They subclass the roots in :mod:`drover.errors`, so the one gRPC mapping in
:mod:`drover.rpc.errors` turns them into statuses with an ErrorInfo reason.
"""

from __future__ import annotations

from drover.errors import InvalidArgument, NotFound, Unavailable


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

"""Errors of access control, each a :mod:`drover.errors` subclass.

Messages name the method, the capability and the token's *accessor* id at
most: a secret never appears in an error (nor in a log).
"""

from __future__ import annotations

from drover.errors import DroverError, FailedPrecondition, InvalidArgument, Kind, Unavailable

__all__ = [
    "AclAlreadyBootstrapped",
    "AclDataStale",
    "InvalidPolicy",
    "PermissionDenied",
    "Unauthenticated",
]


class Unauthenticated(DroverError):
    """No usable identity: an unknown, revoked or malformed token."""

    kind = Kind.UNAUTHENTICATED
    reason = "ACL_TOKEN_INVALID"


class PermissionDenied(DroverError):
    """The caller's identity lacks the capability the method requires."""

    kind = Kind.PERMISSION_DENIED
    reason = "ACL_PERMISSION_DENIED"


class InvalidPolicy(InvalidArgument):
    """A policy document that does not parse or names unknown rules."""

    reason = "INVALID_POLICY"


class AclAlreadyBootstrapped(FailedPrecondition):
    reason = "ACL_ALREADY_BOOTSTRAPPED"


class AclDataStale(Unavailable):
    """This server's ACL view has not been proven current for longer than
    its bound (etcd frozen or cut off), and the down policy is ``deny``:
    a token revoked meanwhile might still be in the view, so nothing that
    needs a capability is judged with it. Retryable: the view recovers by
    itself once the server reaches etcd again."""

    reason = "ACL_DATA_STALE"

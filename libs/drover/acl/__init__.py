"""Access control in Nomad's model: policies, tokens, the RPC table.

Pure modules (no asyncio, no etcd): :mod:`.policy` (documents),
:mod:`.acl` (merged rules, identities), :mod:`.table` (RPC -> requirement
and the check), :mod:`.tokens` (secrets, hashes, the in-memory view).
:mod:`.cache` is the thin async shell feeding :class:`AclState` from an
etcd watch.
"""

from drover.acl.acl import ALL_NAMESPACES, Acl, Identity, IdentityKind
from drover.acl.errors import (
    AclAlreadyBootstrapped,
    InvalidPolicy,
    PermissionDenied,
    Unauthenticated,
)
from drover.acl.policy import NAMESPACE_CAPABILITIES, Level, Policy, parse_policy
from drover.acl.table import TABLE, Requirement, authorize
from drover.acl.tokens import (
    ANONYMOUS_POLICY,
    AUTHORIZATION,
    AclKeys,
    AclState,
    bearer,
    hash_secret,
    new_id,
    parse_bearer,
    server_secret,
)

__all__ = [
    "ALL_NAMESPACES",
    "ANONYMOUS_POLICY",
    "AUTHORIZATION",
    "NAMESPACE_CAPABILITIES",
    "TABLE",
    "Acl",
    "AclAlreadyBootstrapped",
    "AclKeys",
    "AclState",
    "Identity",
    "IdentityKind",
    "InvalidPolicy",
    "Level",
    "PermissionDenied",
    "Policy",
    "Requirement",
    "Unauthenticated",
    "authorize",
    "bearer",
    "hash_secret",
    "new_id",
    "parse_bearer",
    "parse_policy",
    "server_secret",
]

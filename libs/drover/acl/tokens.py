"""Tokens and the in-memory view of every token and policy (pure).

A token is a public *accessor id* and a *secret id* (both random UUIDs).
etcd stores a token under its accessor id with the SHA-256 of its secret,
never the secret: the secret is 122 random bits, so a fast hash resists
guessing as well as a slow one would. :class:`AclState` is what a
watch-fed cache holds: it applies etcd puts and deletes of the ACL keyspace
and resolves a secret to an :class:`Identity`, compiling ACLs lazily (a
change of any token or policy drops the compiled ones).

The *server identity* is a secret every drover server derives from the
cluster secret (HMAC-SHA256 with a fixed label), so broker, watcher and
proxy call the state service as "server" without a stored token; it never
leaves the servers and is never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import uuid
from dataclasses import dataclass

from drover.acl.acl import Acl, Identity, IdentityKind
from drover.acl.errors import InvalidPolicy, Unauthenticated
from drover.acl.policy import Policy, parse_policy
from drover.api.acl.v1 import acl_pb2

__all__ = [
    "ANONYMOUS_POLICY",
    "AUTHORIZATION",
    "AclKeys",
    "AclState",
    "bearer",
    "hash_secret",
    "new_id",
    "parse_bearer",
    "server_secret",
]

log = logging.getLogger(__name__)

AUTHORIZATION = "authorization"
ANONYMOUS_POLICY = "anonymous"
_SERVER_LABEL = b"drover acl server identity v1"
_MAX_SECRET = 128


def new_id() -> str:
    return str(uuid.uuid4())


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def server_secret(cluster_secret: bytes) -> str:
    return hmac.new(cluster_secret, _SERVER_LABEL, hashlib.sha256).hexdigest()


def bearer(secret: str) -> tuple[tuple[str, str], ...]:
    """The call metadata carrying ``secret``."""
    return ((AUTHORIZATION, f"Bearer {secret}"),) if secret else ()


def parse_bearer(value: str) -> str:
    """The secret of an ``authorization: Bearer <secret>`` value."""
    scheme, _, secret = value.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret or len(secret) > _MAX_SECRET:
        raise Unauthenticated("malformed authorization metadata: expected 'Bearer <secret id>'",
                              metadata={"field": AUTHORIZATION})
    return secret


@dataclass(frozen=True)
class AclKeys:
    """Where ACL objects live in etcd, under the keyspace base."""

    base: str  # e.g. /drover/v1/

    @property
    def prefix(self) -> str:
        return f"{self.base}acl/"

    def token(self, accessor_id: str) -> str:
        return f"{self.base}acl/tokens/{accessor_id}"

    def policy(self, name: str) -> str:
        return f"{self.base}acl/policies/{name}"

    @property
    def bootstrap(self) -> str:
        return f"{self.base}acl/bootstrap"


class AclState:
    """Every token and policy, as of the last applied etcd revision."""

    def __init__(self, keys: AclKeys, server_secret_value: str = "") -> None:
        self.keys = keys
        self.revision = 0
        self._tokens: dict[str, acl_pb2.StoredToken] = {}  # accessor -> stored
        self._by_hash: dict[bytes, str] = {}  # secret hash -> accessor
        self._policies: dict[str, Policy] = {}
        self._compiled: dict[str, Identity] = {}
        self._server_hash = hash_secret(server_secret_value) if server_secret_value else b""
        self._server = Identity(IdentityKind.SERVER, Acl(management=True), name="server")

    # -- applying etcd ------------------------------------------------------

    def reset(self, revision: int) -> None:
        self._tokens.clear()
        self._by_hash.clear()
        self._policies.clear()
        self._compiled.clear()
        self.revision = revision

    def put(self, key: str, value: bytes) -> None:
        self._compiled.clear()
        if key.startswith(self.keys.token("")):
            self._drop_token(key.removeprefix(self.keys.token("")))
            stored = acl_pb2.StoredToken.FromString(value)
            self._tokens[stored.token.accessor_id] = stored
            self._by_hash[bytes(stored.secret_sha256)] = stored.token.accessor_id
        elif key.startswith(self.keys.policy("")):
            record = acl_pb2.Policy.FromString(value)
            try:
                self._policies[record.name] = parse_policy(record.name, record.rules)
            except InvalidPolicy as e:  # validated on apply; a hand edit would land here
                log.warning("ignoring invalid stored policy %r: %s", record.name, e.message)
                self._policies.pop(record.name, None)

    def delete(self, key: str) -> None:
        self._compiled.clear()
        if key.startswith(self.keys.token("")):
            self._drop_token(key.removeprefix(self.keys.token("")))
        elif key.startswith(self.keys.policy("")):
            self._policies.pop(key.removeprefix(self.keys.policy("")), None)

    def _drop_token(self, accessor: str) -> None:
        old = self._tokens.pop(accessor, None)
        if old is not None:
            self._by_hash.pop(bytes(old.secret_sha256), None)

    # -- reading ------------------------------------------------------------

    def resolve(self, secret: str | None) -> Identity:
        """The identity of a call: anonymous without a secret; a known token
        or the server identity; else :class:`Unauthenticated`."""
        if secret is None:
            return self._identity("", None)
        digest = hash_secret(secret)
        if self._server_hash and hmac.compare_digest(digest, self._server_hash):
            return self._server
        accessor = self._by_hash.get(digest)
        if accessor is None:
            raise Unauthenticated("the token is unknown or revoked",
                                  metadata={"field": AUTHORIZATION})
        return self._identity(accessor, self._tokens[accessor])

    def _identity(self, accessor: str, stored: acl_pb2.StoredToken | None) -> Identity:
        cached = self._compiled.get(accessor)
        if cached is not None:
            return cached
        if stored is None:
            policy = self._policies.get(ANONYMOUS_POLICY)
            ident = Identity(IdentityKind.ANONYMOUS, Acl.compile([policy] if policy else []))
        elif stored.token.type == acl_pb2.TOKEN_TYPE_MANAGEMENT:
            ident = Identity(IdentityKind.MANAGEMENT, Acl(management=True), accessor,
                             stored.token.name)
        else:
            # A policy deleted after the token was made grants nothing (Nomad).
            policies = [self._policies[p] for p in stored.token.policies if p in self._policies]
            ident = Identity(IdentityKind.CLIENT, Acl.compile(policies), accessor,
                             stored.token.name)
        self._compiled[accessor] = ident
        return ident

"""ACL planners: Bootstrap, ApplyPolicy, DeletePolicy, CreateToken, RevokeToken.

The ACL keyspace (``<base>acl/``, :class:`drover.acl.AclKeys`) is not in the
state cache (every server's :class:`drover.acl.cache.AclCache` watches it),
so these planners read an :class:`AclView`: the keys an :class:`AclWrite`
names in ``reads``, read by the shell from etcd (linearizable range reads)
on every attempt. Invariants:

- every ACL view is fresh (read from etcd for this attempt, never from a
  replica's cache): a refusal on it is the answer, and a bootstrap is
  judged on current data;
- every key a plan writes is compared: a put or delete of an existing
  object on the ``mod`` revision read, a new object absent
  (``create == 0``), so a concurrent change is a conflict and the shell
  plans again on a fresh read (which names the cause: "already
  bootstrapped", "policy not found");
- bootstrap happens once per cluster: ``acl/bootstrap`` is created only if
  absent (compared ``create == 0``), with the first management token in
  the same txn (two concurrent bootstraps cannot both win);
- a token's policies exist when it is created: the txn compares each on
  the create revision read (deleted, or deleted and re-made, meanwhile is
  a conflict); deleting a policy a token names is allowed (the token then
  gets nothing from it, as in Nomad);
- a secret leaves the server only in the response that creates it; the
  plan stores its SHA-256 (:class:`acl_pb2.StoredToken`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from google.protobuf.timestamp_pb2 import Timestamp

from drover.acl import AclAlreadyBootstrapped, AclKeys, hash_secret
from drover.acl.policy import validate_policy_name
from drover.api.acl.v1 import acl_pb2
from drover.coord.kv import Compare, Delete, Op, Put
from drover.errors import InvalidArgument, NotFound
from drover.state.core.plan import Event, WritePlan

#: Event kinds of ACL objects (one per key family; the namespace is "").
POLICY, TOKEN, BOOTSTRAP = "acl_policies", "acl_tokens", "acl_bootstrap"

MAX_TOKEN_NAME = 256
MAX_TOKEN_POLICIES = 64
MAX_DESCRIPTION = 1024


class AclEntry(NamedTuple):
    """One stored ACL key: its value and revisions."""

    value: bytes
    mod: int
    create: int


class AclView(Protocol):
    @property
    def revision(self) -> int:
        """The etcd revision the reads reflect (at least)."""
        ...

    def get(self, key: str) -> AclEntry | None:
        """The entry at ``key`` (one the write named in ``reads``), or None."""
        ...


@dataclass(frozen=True)
class AclSnapshot:
    """An :class:`AclView` on plain data: what the shell read, or a test's."""

    revision: int
    entries: Mapping[str, AclEntry | None]

    def get(self, key: str) -> AclEntry | None:
        if key not in self.entries:  # a planner reads only what it declared
            raise LookupError(f"ACL key {key!r} was not read for this write")
        return self.entries[key]


@dataclass(frozen=True)
class AclContext:
    """Key layout, the call's clock reading and a source of new ids."""

    keys: AclKeys
    now: Timestamp
    new_id: Callable[[], str]


@dataclass(frozen=True)
class AclWrite:
    """A planner and the ACL keys it reads (the shell reads them first)."""

    reads: tuple[str, ...]
    plan: Callable[[AclView], WritePlan]


@dataclass(frozen=True)
class TokenRequest:
    """A validated CreateToken request."""

    name: str
    kind: int
    policies: tuple[str, ...]


# -- validation (request only) --------------------------------------------------

def token_request(name: str, kind: int, policies: list[str]) -> TokenRequest:
    """A token has a bounded name; a management token takes no policies, a
    client token 1-:data:`MAX_TOKEN_POLICIES` valid policy names (duplicates
    dropped, order kept)."""
    name = name.strip()
    if not name or len(name) > MAX_TOKEN_NAME:
        raise InvalidArgument(f"token name must be 1-{MAX_TOKEN_NAME} characters",
                              metadata={"field": "name"})
    kind = kind or acl_pb2.TOKEN_TYPE_CLIENT
    if kind not in (acl_pb2.TOKEN_TYPE_CLIENT, acl_pb2.TOKEN_TYPE_MANAGEMENT):
        raise InvalidArgument("type must be client or management", metadata={"field": "type"})
    unique = tuple(dict.fromkeys(policies))
    if kind == acl_pb2.TOKEN_TYPE_MANAGEMENT and unique:
        raise InvalidArgument("a management token takes no policies",
                              metadata={"field": "policies"})
    if kind == acl_pb2.TOKEN_TYPE_CLIENT and not unique:
        raise InvalidArgument("a client token needs at least one policy",
                              metadata={"field": "policies"})
    if len(unique) > MAX_TOKEN_POLICIES:
        raise InvalidArgument(f"at most {MAX_TOKEN_POLICIES} policies per token",
                              metadata={"field": "policies"})
    for p in unique:
        validate_policy_name(p)
    return TokenRequest(name, kind, unique)


def check_description(description: str) -> None:
    if len(description) > MAX_DESCRIPTION:
        raise InvalidArgument(f"description is longer than {MAX_DESCRIPTION} characters",
                              metadata={"field": "description"})


def check_accessor(accessor: str) -> None:
    if not accessor or len(accessor) > 64 or "/" in accessor:
        raise InvalidArgument("accessor_id must be a token's accessor id",
                              metadata={"field": "accessor_id"})


# -- planners --------------------------------------------------------------------

class _Plan:
    """One plan's compares, ops and events (ACL keys are raw, not codec keys)."""

    def __init__(self) -> None:
        self.compares: list[Compare] = []
        self.ops: list[Op] = []
        self.events: list[Event] = []

    def put(self, kind: str, key: str, oid: str, value: bytes, compare: tuple[str, int]) -> None:
        self.compares.append(Compare(key.encode(), *compare))
        self.ops.append(Put(key.encode(), value))
        self.events.append(Event(kind, "", oid, "put"))

    def delete(self, kind: str, key: str, oid: str, mod: int) -> None:
        self.compares.append(Compare(key.encode(), "mod", mod))
        self.ops.append(Delete(key.encode()))
        self.events.append(Event(kind, "", oid, "delete"))

    def build(self, respond: Callable[[int], Any]) -> WritePlan:
        return WritePlan(tuple(self.compares), tuple(self.ops), tuple(self.events), respond)


def _new_token(ctx: AclContext, name: str, kind: int,
               policies: tuple[str, ...]) -> tuple[acl_pb2.Token, str, bytes]:
    """A new token, its secret, and what etcd stores of it (the secret's hash)."""
    token = acl_pb2.Token(accessor_id=ctx.new_id(), name=name, type=kind,  # type: ignore[arg-type]
                          policies=policies)
    token.create_time.CopyFrom(ctx.now)
    secret = ctx.new_id()
    stored = acl_pb2.StoredToken(token=token, secret_sha256=hash_secret(secret))
    return token, secret, stored.SerializeToString()


def _put_token(ctx: AclContext, plan: _Plan, token: acl_pb2.Token, stored: bytes) -> None:
    """A token is created under a fresh accessor id (compared never created)."""
    plan.put(TOKEN, ctx.keys.token(token.accessor_id), token.accessor_id, stored,
             ("create", 0))


def bootstrapped_once(view: AclView, keys: AclKeys) -> None:
    """Bootstrap only once: refused once ``acl/bootstrap`` exists."""
    if view.get(keys.bootstrap) is not None:
        raise AclAlreadyBootstrapped(
            "ACLs are already bootstrapped; create tokens with a management token")


def bootstrap(ctx: AclContext) -> AclWrite:
    """The first management token and the bootstrap marker, in one txn."""
    keys = ctx.keys

    def plan(view: AclView) -> WritePlan:
        bootstrapped_once(view, keys)
        token, secret, stored = _new_token(ctx, "Bootstrap Token",
                                           acl_pb2.TOKEN_TYPE_MANAGEMENT, ())
        p = _Plan()
        # Both compared absent: of two concurrent bootstraps one txn fails,
        # and its re-plan reads the winner's marker.
        p.put(BOOTSTRAP, keys.bootstrap, "bootstrap", token.accessor_id.encode(), ("create", 0))
        _put_token(ctx, p, token, stored)

        def respond(rev: int) -> acl_pb2.BootstrapResponse:
            token.create_index = rev
            return acl_pb2.BootstrapResponse(token=token, secret_id=secret)
        return p.build(respond)
    return AclWrite((keys.bootstrap,), plan)


def apply_policy(ctx: AclContext, name: str, description: str, rules: str) -> AclWrite:
    """Create or replace a policy (compared on the revision read)."""
    key = ctx.keys.policy(name)

    def plan(view: AclView) -> WritePlan:
        found = view.get(key)
        record = acl_pb2.Policy(name=name, description=description, rules=rules)
        p = _Plan()
        p.put(POLICY, key, name, record.SerializeToString(),
              ("mod", found.mod if found else 0))

        def respond(rev: int) -> acl_pb2.ApplyPolicyResponse:
            out = acl_pb2.Policy()
            out.CopyFrom(record)
            out.create_index = found.create if found else rev
            out.modify_index = rev
            return acl_pb2.ApplyPolicyResponse(policy=out)
        return p.build(respond)
    return AclWrite((key,), plan)


def _delete_existing(kind: str, key: str, oid: str, what: str,
                     respond: Callable[[int], Any]) -> AclWrite:
    """Delete ``key`` as last read (compared on its mod revision); NOT_FOUND
    when it does not exist."""

    def plan(view: AclView) -> WritePlan:
        found = view.get(key)
        if found is None:
            raise NotFound(f"{what} {oid!r} not found")
        p = _Plan()
        p.delete(kind, key, oid, found.mod)
        return p.build(respond)
    return AclWrite((key,), plan)


def delete_policy(ctx: AclContext, name: str) -> AclWrite:
    """Delete an existing policy (tokens naming it keep the name, get nothing)."""
    return _delete_existing(POLICY, ctx.keys.policy(name), name, "policy",
                            lambda rev: acl_pb2.DeletePolicyResponse())


def policies_exist(view: AclView, keys: AclKeys, policies: tuple[str, ...]) -> list[int]:
    """A token's policies must exist: their create revisions, to compare."""
    creates = []
    for name in policies:
        found = view.get(keys.policy(name))
        if found is None:
            raise NotFound(f"policy {name!r} not found; apply it first",
                           metadata={"policy": name})
        creates.append(found.create)
    return creates


def create_token(ctx: AclContext, request: TokenRequest) -> AclWrite:
    """A new token whose policies exist (compared on their create revision)."""
    keys = ctx.keys

    def plan(view: AclView) -> WritePlan:
        creates = policies_exist(view, keys, request.policies)
        p = _Plan()
        p.compares += [Compare(keys.policy(name).encode(), "create", create)
                       for name, create in zip(request.policies, creates, strict=True)]
        token, secret, stored = _new_token(ctx, request.name, request.kind, request.policies)
        _put_token(ctx, p, token, stored)

        def respond(rev: int) -> acl_pb2.CreateTokenResponse:
            token.create_index = rev
            return acl_pb2.CreateTokenResponse(token=token, secret_id=secret)
        return p.build(respond)
    return AclWrite(tuple(keys.policy(name) for name in request.policies), plan)


def revoke_token(ctx: AclContext, accessor: str) -> AclWrite:
    """Delete an existing token (every replica's ACL cache drops it on the event)."""
    return _delete_existing(TOKEN, ctx.keys.token(accessor), accessor, "token",
                            lambda rev: acl_pb2.RevokeTokenResponse())

"""AclService: bootstrap, policies and tokens, hosted by every state replica.

Writes go straight to etcd (one txn each; no cache needed): the ACL keys
live under ``<base>acl/``, which the state cache ignores and every server's
:class:`drover.acl.cache.AclCache` watches. Invariants:

* bootstrap happens once per cluster: the txn creates ``acl/bootstrap``
  only if it has never existed (compare create_revision == 0), with the
  first management token in the same txn, so two concurrent bootstraps
  cannot both win;
* a secret leaves the server only in the response that creates it; etcd
  holds its SHA-256 (:class:`acl_pb2.StoredToken`);
* who may call what is the interceptor's business (drover.acl.TABLE);
  this servicer only validates input;
* with ACLs off (no interceptor, so no identity) every call is refused
  with FAILED_PRECONDITION ``ACL_DISABLED``: tokens minted while anyone
  may call anything would be trusted the moment ACLs are turned on.
"""

from __future__ import annotations

from typing import Any

from drover.acl import AclAlreadyBootstrapped, AclKeys, Identity, hash_secret, new_id
from drover.acl.policy import parse_policy, validate_policy_name
from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc
from drover.errors import FailedPrecondition, InvalidArgument, NotFound
from drover.rpc.acl import current_identity
from drover.state.store import KV, Compare, Delete, KVStore, Put

__all__ = ["AclAdmin"]

_MAX_NAME = 256
_MAX_POLICIES = 64


def _end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


class AclDisabled(FailedPrecondition):
    reason = "ACL_DISABLED"


def _enabled() -> Identity:
    identity = current_identity()
    if identity is None:
        raise AclDisabled("ACLs are not enabled on this cluster: start every service with "
                          "--acl (DROVER_ACL=true)")
    return identity


class AclAdmin(acl_pb2_grpc.AclServiceServicer):
    def __init__(self, store: KVStore, keys: AclKeys, wall: Any) -> None:
        self.store, self.keys, self._now = store, keys, wall

    def _token(self, name: str, kind: int, policies: list[str]) -> tuple[acl_pb2.Token, str]:
        token = acl_pb2.Token(accessor_id=new_id(), name=name, type=kind,  # type: ignore[arg-type]
                              policies=policies)
        token.create_time.CopyFrom(self._now())
        return token, new_id()

    async def _put_token(self, token: acl_pb2.Token, secret: str,
                         compares: list[Compare], extra: list[Put]) -> int:
        stored = acl_pb2.StoredToken(token=token, secret_sha256=hash_secret(secret))
        key = self.keys.token(token.accessor_id).encode()
        result = await self.store.txn([*compares, Compare(key, "create", 0)],
                                      [*extra, Put(key, stored.SerializeToString())])
        return result.revision if result.succeeded else 0

    async def Bootstrap(self, request: Any, context: Any) -> Any:
        _enabled()
        token, secret = self._token("Bootstrap Token", acl_pb2.TOKEN_TYPE_MANAGEMENT, [])
        marker = self.keys.bootstrap.encode()
        rev = await self._put_token(token, secret, [Compare(marker, "create", 0)],
                                    [Put(marker, token.accessor_id.encode())])
        if not rev:
            raise AclAlreadyBootstrapped(
                "ACLs are already bootstrapped; create tokens with a management token")
        token.create_index = rev
        return acl_pb2.BootstrapResponse(token=token, secret_id=secret)

    async def ApplyPolicy(self, request: Any, context: Any) -> Any:
        _enabled()
        parse_policy(request.name, request.rules)  # refuse what the caches could not use
        if len(request.description) > 1024:
            raise InvalidArgument("description is longer than 1024 characters",
                                  metadata={"field": "description"})
        record = acl_pb2.Policy(name=request.name, description=request.description,
                                rules=request.rules)
        result = await self.store.txn([], [Put(self.keys.policy(request.name).encode(),
                                               record.SerializeToString())])
        page = await self.store.range(self.keys.policy(request.name).encode(), b"")
        if page.kvs:
            record.create_index = page.kvs[0].create_revision
        record.modify_index = result.revision
        return acl_pb2.ApplyPolicyResponse(policy=record)

    async def _list(self, prefix: str) -> list[KV]:
        out: list[KV] = []
        key = prefix.encode()
        end = _end(key)
        while True:
            page = await self.store.range(key, end, limit=500)
            out.extend(page.kvs)
            if not page.more or not page.kvs:
                return out
            key = page.kvs[-1].key + b"\0"

    async def ListPolicies(self, request: Any, context: Any) -> Any:
        _enabled()
        policies = []
        for kv in await self._list(self.keys.policy("")):
            p = acl_pb2.Policy.FromString(kv.value)
            p.create_index, p.modify_index = kv.create_revision, kv.mod_revision
            policies.append(p)
        return acl_pb2.ListPoliciesResponse(policies=policies)

    async def DeletePolicy(self, request: Any, context: Any) -> Any:
        _enabled()
        validate_policy_name(request.name)
        key = self.keys.policy(request.name).encode()
        result = await self.store.txn([Compare(key, "version", 0)], [])
        if result.succeeded:  # version 0: absent
            raise NotFound(f"policy {request.name!r} not found")
        await self.store.txn([], [Delete(key)])
        return acl_pb2.DeletePolicyResponse()

    async def CreateToken(self, request: Any, context: Any) -> Any:
        _enabled()
        name = request.name.strip()
        if not name or len(name) > _MAX_NAME:
            raise InvalidArgument(f"token name must be 1-{_MAX_NAME} characters",
                                  metadata={"field": "name"})
        kind = request.type or acl_pb2.TOKEN_TYPE_CLIENT
        if kind not in (acl_pb2.TOKEN_TYPE_CLIENT, acl_pb2.TOKEN_TYPE_MANAGEMENT):
            raise InvalidArgument("type must be client or management",
                                  metadata={"field": "type"})
        policies = list(dict.fromkeys(request.policies))
        if kind == acl_pb2.TOKEN_TYPE_MANAGEMENT and policies:
            raise InvalidArgument("a management token takes no policies",
                                  metadata={"field": "policies"})
        if kind == acl_pb2.TOKEN_TYPE_CLIENT and not policies:
            raise InvalidArgument("a client token needs at least one policy",
                                  metadata={"field": "policies"})
        if len(policies) > _MAX_POLICIES:
            raise InvalidArgument(f"at most {_MAX_POLICIES} policies per token",
                                  metadata={"field": "policies"})
        compares = []
        for p in policies:
            validate_policy_name(p)
            key = self.keys.policy(p).encode()
            page = await self.store.range(key, b"")
            if not page.kvs:
                raise NotFound(f"policy {p!r} not found; apply it first",
                               metadata={"policy": p})
            compares.append(Compare(key, "create", page.kvs[0].create_revision))
        token, secret = self._token(name, kind, policies)
        rev = await self._put_token(token, secret, compares, [])
        if not rev:
            raise NotFound("a policy of the token was deleted meanwhile; retry")
        token.create_index = rev
        return acl_pb2.CreateTokenResponse(token=token, secret_id=secret)

    async def ListTokens(self, request: Any, context: Any) -> Any:
        _enabled()
        tokens = []
        for kv in await self._list(self.keys.token("")):
            t = acl_pb2.StoredToken.FromString(kv.value).token
            t.create_index = kv.create_revision
            tokens.append(t)
        return acl_pb2.ListTokensResponse(tokens=tokens)

    async def RevokeToken(self, request: Any, context: Any) -> Any:
        _enabled()
        accessor = request.accessor_id
        if not accessor or len(accessor) > 64 or "/" in accessor:
            raise InvalidArgument("accessor_id must be a token's accessor id",
                                  metadata={"field": "accessor_id"})
        key = self.keys.token(accessor).encode()
        result = await self.store.txn([Compare(key, "version", 0)], [])
        if result.succeeded:
            raise NotFound(f"token {accessor!r} not found")
        await self.store.txn([], [Delete(key)])
        return acl_pb2.RevokeTokenResponse()

    async def GetSelfToken(self, request: Any, context: Any) -> Any:
        identity = _enabled()
        if identity.accessor_id:
            page = await self.store.range(self.keys.token(identity.accessor_id).encode(), b"")
            if page.kvs:
                stored = acl_pb2.StoredToken.FromString(page.kvs[0].value)
                stored.token.create_index = page.kvs[0].create_revision
                return acl_pb2.GetSelfTokenResponse(token=stored.token)
        raise NotFound(f"the caller ({identity.describe}) has no stored token")

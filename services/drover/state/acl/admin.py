"""AclService: bootstrap, policies and tokens, hosted by every state replica.

Writes are planned by the pure core (:mod:`drover.state.acl.core.acl`, where
their rules and invariants live) and committed through the state service's
one :func:`drover.state.pipeline.transact_on` (one retry policy, one commit
primitive): each handler validates, transacts, answers. The ACL keys live
under ``<base>acl/``, which the state cache ignores and every server's
:class:`drover.acl.cache.AclCache` watches. Invariants:

* every read here is a linearizable etcd read, never a replica's cache:
  the keys a planner judges on are read for each attempt (so a bootstrap,
  a "not found" or a token's policies are judged on current data, and the
  plan's compares make that judgement hold in the txn); the lists and
  GetSelfToken page the ACL prefix from etcd;
* who may call what is the interceptor's business (drover.acl.TABLE);
  this module only validates input (its RPCs arrive through
  :class:`drover.state.servicer.AclServicer`);
* with ACLs off (no interceptor, so no identity) every call is refused
  with FAILED_PRECONDITION ``ACL_DISABLED``: tokens minted while anyone
  may call anything would be trusted the moment ACLs are turned on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from drover.acl import AclKeys, Identity, new_id
from drover.acl.policy import parse_policy, validate_policy_name
from drover.api.acl.v1 import acl_pb2
from drover.coord.kv import KV
from drover.errors import NotFound
from drover.rpc.acl import current_identity
from drover.state.acl.core import acl
from drover.state.errors import AclDisabled
from drover.state.pipeline import Writer, transact_on

__all__ = ["AclAdmin"]


def _end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


def _enabled() -> Identity:
    identity = current_identity()
    if identity is None:
        raise AclDisabled("ACLs are not enabled on this cluster: start every service with "
                          "--acl (DROVER_ACL=true)")
    return identity


class AclAdmin:
    def __init__(self, writer: Writer, keys: AclKeys, wall: Any) -> None:
        self.writer, self.store, self.keys, self._now = writer, writer.store, keys, wall

    def _context(self) -> acl.AclContext:
        return acl.AclContext(self.keys, self._now(), new_id)

    async def _read(self, keys: tuple[str, ...]) -> acl.AclSnapshot:
        """The keys a planner reads, from etcd (linearizable: always fresh)."""
        pages = await asyncio.gather(*(self.store.range(k.encode(), b"") for k in keys))
        entries = {k: (acl.AclEntry(p.kvs[0].value, p.kvs[0].mod_revision,
                                    p.kvs[0].create_revision) if p.kvs else None)
                   for k, p in zip(keys, pages, strict=True)}
        return acl.AclSnapshot(max((p.revision for p in pages), default=0), entries)

    async def _transact(self, write: acl.AclWrite) -> Any:
        async def views(fresh: bool) -> acl.AclSnapshot:
            return await self._read(write.reads)
        return await transact_on(views, self.writer, write.plan)

    async def bootstrap(self, request: Any) -> Any:
        _enabled()
        return await self._transact(acl.bootstrap(self._context()))

    async def apply_policy(self, request: Any) -> Any:
        _enabled()
        # refuse what the caches could not use
        parsed = parse_policy(request.name, request.rules)
        acl.check_description(request.description)
        resp = await self._transact(acl.apply_policy(
            self._context(), request.name, request.description, request.rules))
        resp.warnings.extend(parsed.warnings)
        return resp

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

    async def list_policies(self, request: Any) -> Any:
        _enabled()
        policies = []
        for kv in await self._list(self.keys.policy("")):
            p = acl_pb2.Policy.FromString(kv.value)
            p.create_index, p.modify_index = kv.create_revision, kv.mod_revision
            policies.append(p)
        return acl_pb2.ListPoliciesResponse(policies=policies)

    async def delete_policy(self, request: Any) -> Any:
        _enabled()
        validate_policy_name(request.name)
        return await self._transact(acl.delete_policy(self._context(), request.name))

    async def create_token(self, request: Any) -> Any:
        _enabled()
        valid = acl.token_request(request.name, request.type, list(request.policies))
        return await self._transact(acl.create_token(self._context(), valid))

    async def list_tokens(self, request: Any) -> Any:
        _enabled()
        tokens = []
        for kv in await self._list(self.keys.token("")):
            t = acl_pb2.StoredToken.FromString(kv.value).token
            t.create_index = kv.create_revision
            tokens.append(t)
        return acl_pb2.ListTokensResponse(tokens=tokens)

    async def revoke_token(self, request: Any) -> Any:
        _enabled()
        acl.check_accessor(request.accessor_id)
        return await self._transact(acl.revoke_token(self._context(), request.accessor_id))

    async def get_self_token(self, request: Any) -> Any:
        identity = _enabled()
        if identity.accessor_id:
            page = await self.store.range(self.keys.token(identity.accessor_id).encode(), b"")
            if page.kvs:
                stored = acl_pb2.StoredToken.FromString(page.kvs[0].value)
                stored.token.create_index = page.kvs[0].create_revision
                return acl_pb2.GetSelfTokenResponse(token=stored.token)
        raise NotFound(f"the caller ({identity.describe}) has no stored token")

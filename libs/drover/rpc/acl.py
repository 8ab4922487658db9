"""The one server interceptor that enforces access control.

For every call to a drover service this server hosts, it resolves the
caller's identity from metadata ``authorization: Bearer <secret>`` (none:
anonymous) against the watch-fed :class:`~drover.acl.cache.AclCache`, and
checks the method's requirement from :data:`drover.acl.TABLE` against the
deserialized request (namespaces are request fields). Failures are
UNAUTHENTICATED (unknown, revoked or malformed token) or PERMISSION_DENIED
(missing capability), both with ErrorInfo through :func:`drover.rpc.errors.abort`
(the one mapping). While the cache's view of tokens and policies has not
been proven current for longer than its bound (etcd frozen or cut off),
every call that needs a capability is UNAVAILABLE with reason
ACL_DATA_STALE instead, unless the down policy is ``extend-cache``
(:mod:`drover.acl.freshness`); the server identity and Bootstrap do not
depend on that view and pass. It sits outside the error interceptor, so a caller
without the right learns nothing from request validation either: the
check only reads namespace strings, safe on any decoded request.

A drover method missing from the table is refused (PERMISSION_DENIED),
never allowed by default. Methods of services this server does not host
(the proxy's generic forwarding) pass: the backend enforces them with the
forwarded token. Health and reflection are not drover services and pass.

A read for every namespace (``*``) by a token that may read only some is
narrowed, not refused: the namespaces it may see are set for the handler in
:data:`drover.acl.visibility.VISIBLE` (Nomad's list filtering).

The resolved :class:`~drover.acl.Identity` is available to the handler
through :func:`current_identity` (the state service requires the server
identity for leader-only writes). Secrets are never logged or echoed.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import grpc

from drover.acl import (
    AUTHORIZATION,
    TABLE,
    Identity,
    IdentityKind,
    PermissionDenied,
    Unauthenticated,
    authorize,
    parse_bearer,
)
from drover.acl.cache import AclCache
from drover.acl.freshness import Freshness
from drover.acl.tokens import AclKeys, AclState, server_secret
from drover.acl.visibility import VISIBLE
from drover.config import ServeSettings
from drover.coord import EtcdKV, Keyspace, cluster_secret, connect
from drover.coord.errors import EtcdUnavailable
from drover.errors import DroverError, Internal, Unavailable
from drover.rpc.errors import abort
from drover.rpc.reads import is_read
from drover.rpc.wrapping import WrappingInterceptor
from drover.telemetry.observed import observe

__all__ = ["AclInterceptor", "AclRuntime", "current_identity"]

#: The cluster secret the server identity is derived from.
SERVER_SECRET_NAME = "acl-server"

log = logging.getLogger(__name__)

_IDENTITY: contextvars.ContextVar[Identity | None] = contextvars.ContextVar(
    "drover_acl_identity", default=None)


def current_identity() -> Identity | None:
    """The identity of the call being handled; None when ACLs are off."""
    return _IDENTITY.get()


class AclSource(Protocol):
    """What the interceptor needs of the cache."""

    @property
    def state(self) -> AclState: ...

    @property
    def ready(self) -> Any: ...

    @property
    def freshness(self) -> Freshness: ...

    async def catch_up(self, within: float = ...) -> bool: ...


def _secret(metadata: Iterable[tuple[str, Any]] | None) -> str | None:
    for key, value in metadata or ():
        if key == AUTHORIZATION:
            return parse_bearer(value if isinstance(value, str) else value.decode())
    return None


class AclInterceptor(WrappingInterceptor):
    def __init__(self, source: AclSource, services: Iterable[str]) -> None:
        super().__init__()
        self._source = source
        self._services = frozenset(services)

    async def _check(self, method: str, request: Any, context: Any) -> None:
        if not self._source.ready.is_set():
            raise Unavailable("access control is still loading tokens and policies; retry")
        secret = _secret(context.invocation_metadata())
        req = TABLE.get(method)
        # Default deny holds when the view goes stale: judged before the
        # token, since a stale view may still hold a revoked one.
        stale = (self._source.freshness.refusal()
                 if req is None or req.kind != "none" else None)
        try:
            identity = self._source.state.resolve(secret)
        except Unauthenticated:
            if stale is not None:
                raise stale from None  # unknown to a stale view: no catch-up to wait for
            # Unknown here: maybe created a moment ago through another replica.
            await self._source.catch_up()
            identity = self._source.state.resolve(secret)
        if stale is not None and identity.kind is not IdentityKind.SERVER:
            # The server identity derives from the cluster secret, not the view.
            raise stale
        if req is None:
            raise PermissionDenied(f"{method[:200]} has no access rule; refused",
                                   metadata={"method": method[:200]})
        VISIBLE.set(authorize(identity, req, request, method, narrow=is_read(method)))
        _IDENTITY.set(identity)

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        service = method.split("/")[1] if method.count("/") >= 2 else ""
        if service not in self._services:
            return handler
        check = self._check

        async def admit(request: Any, context: Any) -> None:
            try:
                await check(method, request, context)
            except DroverError as err:
                await abort(context, err)
            except Exception:  # a bug here must not answer UNKNOWN nor let the call in
                log.exception("access check failed for %s", method[:200])
                await abort(context, Internal("access check failed; see the server log"))

        def unary(behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            async def wrapper(request: Any, context: Any) -> Any:
                await admit(request, context)
                return await behavior(request, context)

            return wrapper

        def stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
            async def wrapper(request: Any, context: Any) -> Any:
                await admit(request, context)
                async for item in behavior(request, context):
                    yield item

            return wrapper

        kw = {"request_deserializer": handler.request_deserializer,
              "response_serializer": handler.response_serializer}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), **kw)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(stream(handler.unary_stream), **kw)
        # Client-streaming calls carry requests the check cannot see up front;
        # drover has none, so refuse rather than let one through unchecked.
        raise_denied = PermissionDenied(f"{method[:200]}: streaming requests are not supported "
                                        "with access control")

        async def refuse(request: Any, context: Any) -> Any:
            await abort(context, raise_denied)

        return grpc.unary_unary_rpc_method_handler(refuse)


class AclRuntime:
    """What a server with ``--acl`` runs: an etcd client of its own, the
    server identity (derived from the cluster secret) and the cache."""

    def __init__(self, client: Any, cache: AclCache, server_token: str,
                 service: str = "") -> None:
        self.client, self.cache, self.server_token = client, cache, server_token
        attrs = {"service": service}
        self._unobserve = observe(
            "drover.acl.staleness", lambda: [(cache.freshness.staleness(), attrs)], unit="s",
            description="seconds since this server's ACL view (tokens, policies) was last "
                        "proven current with etcd; past the ACL max stale bound, calls that "
                        "need a capability are refused (down policy deny)")

    @classmethod
    async def start(cls, settings: ServeSettings) -> AclRuntime:
        client = await connect(settings.etcd, purpose="acl")
        try:
            keyspace = Keyspace(settings.etcd.prefix)
            kv = EtcdKV(client)
            token = server_secret(await cluster_secret(kv, keyspace, SERVER_SECRET_NAME))
            cache = await AclCache(kv, AclKeys(keyspace.base), token,
                                   settings=settings.acl_settings).start()
            try:
                async with asyncio.timeout(max(settings.etcd.dial_timeout, 5.0)):
                    await cache.ready.wait()
            except TimeoutError:
                await cache.close()
                raise EtcdUnavailable("ACL tokens and policies could not be loaded from "
                                      "etcd in time") from None
        except BaseException:
            await client.close()
            raise
        return cls(client, cache, token, settings.service)

    async def close(self) -> None:
        self._unobserve()
        await self.cache.close()
        await self.client.close()

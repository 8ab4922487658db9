"""Server interceptors that wrap each method's handler once.

grpc.aio asks every server interceptor for a handler on every call. Building
a wrapped handler per call (closures, a new ``RpcMethodHandler``) was a
measurable share of a call's fixed cost, so a :class:`WrappingInterceptor`
builds it once per method and reuses it. The memo is keyed by method and
checked against the inner handler's identity, so a changed inner handler
(another interceptor's rebuild) is wrapped afresh. grpc only returns
handlers of registered methods: the memo is bounded by the server's methods.
Everything per call (peer, metadata, trace context) is read inside the
wrapper, never captured at wrap time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc


class WrappingInterceptor(grpc.aio.ServerInterceptor):
    """Base of drover's server interceptors: subclasses say how to ``wrap``."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """``handler`` of ``method`` as this interceptor serves it."""
        raise NotImplementedError

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        method = details.method
        hit = self._wrapped.get(method)
        if hit is not None and hit[0] is handler:
            return hit[1]
        wrapped = self.wrap(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

"""W3C trace context across every drover hop.

The client half, :class:`TraceClientInterceptor`, is on every channel that
:func:`drover.rpc.channels.channel` builds: each call gets a CLIENT span and
its ``traceparent``/``tracestate`` (whatever ``OTEL_PROPAGATORS`` says; W3C
trace context and baggage by default) in the metadata. An incoming
``traceparent`` already in the metadata (the proxy forwards its caller's
metadata) is replaced, so the next hop is a child of this one and not of the
caller. The server half, :func:`incoming_context`, is what the observe
interceptor parents its SERVER span on.

Spans are started without being made current across an ``await`` of the
call: grpc.aio finishes calls from callbacks in other contexts, and a
context token detached in another context is the "Failed to detach context"
error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})


_EMPTY = otel_context.Context()  # immutable: safe to share
_W3C = (TraceContextTextMapPropagator, W3CBaggagePropagator)
_w3c_only: tuple[object, bool] = (None, False)


def _only_w3c(textmap: object) -> bool:
    """Whether ``textmap`` (the global propagator) reads nothing but the W3C
    keys: true for the default (trace context and baggage)."""
    global _w3c_only
    if _w3c_only[0] is not textmap:
        parts = getattr(textmap, "_propagators", None) if isinstance(
            textmap, CompositePropagator) else [textmap]
        _w3c_only = (textmap, parts is not None and all(isinstance(p, _W3C) for p in parts))
    return _w3c_only[1]


def incoming_context(metadata: Iterable[tuple[str, Any]] | None) -> otel_context.Context:
    """The caller's trace context from gRPC invocation metadata.

    With the default propagators a call without ``traceparent``/``baggage``
    costs one scan of its metadata; other propagators see all of it."""
    textmap = propagate.get_global_textmap()
    if _only_w3c(textmap):
        carrier = {k: v for k, v in metadata or () if k in _TRACE_KEYS and isinstance(v, str)}
        return textmap.extract(carrier) if carrier else _EMPTY
    return textmap.extract({k: v for k, v in metadata or () if isinstance(v, str)})


def _with_context(details: grpc.aio.ClientCallDetails, ctx: otel_context.Context
                  ) -> grpc.aio.ClientCallDetails:
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=ctx)
    kept = [(k, v) for k, v in (details.metadata or ()) if k not in _TRACE_KEYS]
    metadata = grpc.aio.Metadata(*kept, *carrier.items())
    return grpc.aio.ClientCallDetails(
        method=details.method,
        timeout=details.timeout,
        metadata=metadata,
        credentials=details.credentials,
        wait_for_ready=details.wait_for_ready,
    )


def _name(method: str | bytes) -> str:
    name = method.decode() if isinstance(method, bytes) else method
    return name.lstrip("/")


class TraceClientInterceptor(
    grpc.aio.UnaryUnaryClientInterceptor,
    grpc.aio.UnaryStreamClientInterceptor,
    grpc.aio.StreamUnaryClientInterceptor,
    grpc.aio.StreamStreamClientInterceptor,
):
    """A CLIENT span per call, its context injected into the metadata."""

    def __init__(self) -> None:
        self._tracer = trace.get_tracer("drover.rpc.client")

    def _start(self, details: grpc.aio.ClientCallDetails
               ) -> tuple[trace.Span, grpc.aio.ClientCallDetails]:
        name = _name(details.method)
        service, _, method = name.partition("/")
        span = self._tracer.start_span(
            name, kind=SpanKind.CLIENT,
            attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": method},
        )
        ctx = trace.set_span_in_context(span)
        return span, _with_context(details, ctx)

    @staticmethod
    def _end_when_done(span: trace.Span, call: Any) -> Any:
        def done(c: Any) -> None:
            if c.cancelled():
                span.set_status(Status(StatusCode.ERROR, "cancelled"))
            span.end()

        try:
            call.add_done_callback(done)
        except Exception:
            span.end()
        return call

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        span, details = self._start(details)
        try:
            call = await continuation(details, request)
        except BaseException:
            span.end()
            raise
        return self._end_when_done(span, call)

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await self.intercept_unary_unary(continuation, details, request)

    async def intercept_stream_unary(self, continuation: Any, details: Any,
                                     request_iterator: Any) -> Any:
        return await self.intercept_unary_unary(continuation, details, request_iterator)

    async def intercept_stream_stream(self, continuation: Any, details: Any,
                                      request_iterator: Any) -> Any:
        return await self.intercept_unary_unary(continuation, details, request_iterator)

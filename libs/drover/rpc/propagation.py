"""W3C trace context across every drover hop.

The client half, :class:`TracedChannel`, is every channel that
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
error. Without a span exporter the spans are ids only (see
:mod:`drover.telemetry._lean`) and nothing waits for a call to end them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.baggage import get_all
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)
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


#: The one traceparent every drover hop sends: version 00, nothing after.
_TRACEPARENT_00 = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def incoming_context(metadata: Iterable[tuple[str, Any]] | None) -> otel_context.Context:
    """The caller's trace context from gRPC invocation metadata.

    With the default propagators a call without ``traceparent``/``baggage``
    costs one scan of its metadata, and one with only a version-00
    ``traceparent`` (what drover channels send) is parsed here, as the W3C
    propagator would; anything else (``tracestate``, ``baggage``, another
    version, other propagators) goes through the propagators."""
    textmap = propagate.get_global_textmap()
    if not _only_w3c(textmap):
        return textmap.extract({k: v for k, v in metadata or () if isinstance(v, str)})
    carrier = {k: v for k, v in metadata or () if k in _TRACE_KEYS and isinstance(v, str)}
    if not carrier:
        return _EMPTY
    if len(carrier) == 1 and "traceparent" in carrier:
        m = _TRACEPARENT_00.fullmatch(carrier["traceparent"])
        if m is not None:
            trace_id, span_id = int(m.group(1), 16), int(m.group(2), 16)
            if not (trace_id and span_id):
                return _EMPTY  # invalid ids: W3C says ignore the header
            parent = SpanContext(trace_id, span_id, is_remote=True,
                                 trace_flags=TraceFlags(int(m.group(3), 16)))
            return trace.set_span_in_context(NonRecordingSpan(parent), _EMPTY)
    return textmap.extract(carrier)


Metadata = Sequence[tuple[str, "str | bytes"]]
TokenSource = Callable[[], str]


class ServerToken:
    """A service's own identity on its outgoing calls: a :data:`TokenSource`
    read on every call, so the secret set once ACLs are on (the server
    bootstrap calls the app's ``set_server_token`` before ``prepare``)
    reaches channels made before it was known. Empty: no token sent."""

    def __init__(self) -> None:
        self.secret = ""

    def __call__(self) -> str:
        return self.secret


def _name(method: str | bytes) -> str:
    name = method.decode() if isinstance(method, bytes) else method
    return name.lstrip("/")


class _Call:
    """What every traced multicallable shares: the method's CLIENT span
    name and attributes, the tracer, the token source."""

    def __init__(self, inner: Any, method: str | bytes, tracer: trace.Tracer,
                 token: TokenSource | None) -> None:
        self._inner = inner
        self._name = _name(method)
        service, _, name = self._name.partition("/")
        self._attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}
        self._tracer = tracer
        self._token = token

    def _start(self, request: Any, timeout: float | None, metadata: Metadata | None,
               credentials: Any, wait_for_ready: bool | None, compression: Any) -> Any:
        span = self._tracer.start_span(self._name, kind=SpanKind.CLIENT,
                                       attributes=self._attributes)
        try:
            call = self._inner(request, timeout=timeout,
                               metadata=self._metadata(metadata, span),
                               credentials=credentials, wait_for_ready=wait_for_ready,
                               compression=compression)
        except BaseException:
            span.end()
            raise
        if span.is_recording():  # ids-only spans have nothing to end
            _end_when_done(span, call)
        return call

    def _metadata(self, metadata: Metadata | None, span: trace.Span) -> Metadata:
        """The caller's metadata, its trace keys (a forwarded caller's
        context) replaced by this call's, plus the token if any."""
        out = [(k, v) for k, v in metadata or () if k not in _TRACE_KEYS]
        textmap = propagate.get_global_textmap()
        ctx = span.get_span_context()
        if _only_w3c(textmap) and ctx.is_valid and not ctx.trace_state and not get_all():
            # What the W3C propagators would write (no state, no baggage).
            out.append(("traceparent",
                        f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"))
        else:
            carrier: dict[str, str] = {}
            textmap.inject(carrier, context=trace.set_span_in_context(span))
            out.extend(carrier.items())
        if self._token is not None:
            secret = self._token()
            if secret:
                out = [(k, v) for k, v in out if k != "authorization"]
                out.append(("authorization", f"Bearer {secret}"))
        return tuple(out)


def _end_when_done(span: trace.Span, call: Any) -> None:
    def done(c: Any) -> None:
        if c.cancelled():
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        span.end()

    try:
        call.add_done_callback(done)
    except Exception:
        span.end()


class _UnaryRequest(_Call):
    def __call__(self, request: Any, *, timeout: float | None = None,
                 metadata: Metadata | None = None, credentials: Any = None,
                 wait_for_ready: bool | None = None, compression: Any = None) -> Any:
        return self._start(request, timeout, metadata, credentials, wait_for_ready, compression)


class _StreamRequest(_Call):
    def __call__(self, request_iterator: Any = None, timeout: float | None = None,
                 metadata: Metadata | None = None, credentials: Any = None,
                 wait_for_ready: bool | None = None, compression: Any = None) -> Any:
        return self._start(request_iterator, timeout, metadata, credentials, wait_for_ready,
                           compression)


class TracedChannel(grpc.aio.Channel):
    """``inner`` whose every call gets a CLIENT span, that span's context in
    its metadata and, with ``token``, ``authorization: Bearer <token()>``.

    A wrapper and not client interceptors: grpc.aio runs an intercepted call
    in a task of its own and passes every streamed message through the
    interceptor's iterator, a fixed cost per call and per message that this
    metadata-only work does not need. The calls returned are grpc's own.
    """

    def __init__(self, inner: grpc.aio.Channel, *, token: TokenSource | None = None) -> None:
        self._inner = inner
        self._token = token
        self._tracer = trace.get_tracer("drover.rpc.client")

    @property
    def inner(self) -> grpc.aio.Channel:
        return self._inner

    async def __aenter__(self) -> TracedChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.close()

    async def close(self, grace: float | None = None) -> None:
        await self._inner.close(grace)

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._inner.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._inner.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._inner.channel_ready()

    def unary_unary(self, method: str, request_serializer: Any = None,
                    response_deserializer: Any = None, _registered_method: bool | None = False,
                    ) -> Any:
        return _UnaryRequest(self._inner.unary_unary(
            method, request_serializer, response_deserializer, _registered_method),
            method, self._tracer, self._token)

    def unary_stream(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: bool | None = False,
                     ) -> Any:
        return _UnaryRequest(self._inner.unary_stream(
            method, request_serializer, response_deserializer, _registered_method),
            method, self._tracer, self._token)

    def stream_unary(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: bool | None = False,
                     ) -> Any:
        return _StreamRequest(self._inner.stream_unary(
            method, request_serializer, response_deserializer, _registered_method),
            method, self._tracer, self._token)

    def stream_stream(self, method: str, request_serializer: Any = None,
                      response_deserializer: Any = None, _registered_method: bool | None = False,
                      ) -> Any:
        return _StreamRequest(self._inner.stream_stream(
            method, request_serializer, response_deserializer, _registered_method),
            method, self._tracer, self._token)

"""Server interceptors: structured access logs, a trace span per call, and
the ``rpc.server.call.duration`` histogram (seconds, OpenTelemetry semantic
conventions), labelled by service, method and status code.

Order in the server: observe (outermost, sees the final status) then errors
(maps DroverError to a status). Streaming calls are timed until the stream
ends.

The SERVER span is a child of the caller's W3C trace context (the
``traceparent`` metadata, see :mod:`drover.rpc.propagation`). For a stream
the span is current only while the handler computes its next message, never
across a ``yield``: a cancelled stream is closed by grpc.aio from another
context, and a context token attached before the ``yield`` cannot be
detached there ("Failed to detach context").
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from drover.rpc.propagation import incoming_context
from drover.rpc.wrapping import WrappingInterceptor
from drover.telemetry import meter, tracer

log = logging.getLogger("drover.rpc.access")


def _split(method: str) -> tuple[str, str]:
    _, service, name = method.split("/", 2) if method.count("/") >= 2 else ("", "", method)
    return service, name


def _code_of(context: grpc.aio.ServicerContext[Any, Any], err: BaseException | None) -> str:
    if isinstance(err, grpc.RpcError) and hasattr(err, "code"):
        return str(err.code().name)
    if isinstance(err, (asyncio.CancelledError, GeneratorExit)):
        # The call is gone; its context must not be touched any more.
        return "CANCELLED"
    try:
        code = context.code()
    except Exception:
        code = None
    if code is None:
        return "OK" if err is None else "UNKNOWN"
    if isinstance(code, grpc.StatusCode):
        return code.name
    return str(code)


class ObserveInterceptor(WrappingInterceptor):
    """Logs, traces and times every call (each method wrapped once: see
    :mod:`drover.rpc.wrapping`)."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service
        self._tracer = tracer("drover.rpc")
        self._duration = meter("drover.rpc").create_histogram(
            "rpc.server.call.duration",
            unit="s",
            description="Duration of drover server calls",
        )

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """``handler`` of ``method`` logged, traced and timed."""
        rpc_service, rpc_method = _split(method)
        if rpc_service.startswith("grpc.reflection"):
            return handler
        quiet_ok = rpc_service.startswith("grpc.health")
        tracer_, duration = self._tracer, self._duration
        attributes = {"rpc.system": "grpc", "rpc.service": rpc_service, "rpc.method": rpc_method}
        labels_by_code: dict[str, dict[str, str]] = {}

        def finish(context: Any, peer: str, start: float, err: BaseException | None) -> None:
            code = _code_of(context, err)
            elapsed = time.perf_counter() - start
            labels = labels_by_code.get(code)
            if labels is None:  # bounded: one per status code
                labels = labels_by_code[code] = {
                    "rpc.service": rpc_service,
                    "rpc.method": rpc_method,
                    "rpc.grpc.status_code": code,
                }
            duration.record(elapsed, labels)
            level = logging.DEBUG if code == "OK" or quiet_ok else logging.INFO
            if log.isEnabledFor(level):
                log.log(level, "%s %s", method, code,
                        extra={"fields": {"ms": round(elapsed * 1000, 2), "peer": peer}})

        def begin(context: Any) -> tuple[float, str, Any, Any]:
            """The call's start, peer, server span and the context it is current in."""
            start = time.perf_counter()
            # Read the peer now: after a cancelled call ends, its context
            # refers to a released C call object.
            peer = context.peer()
            parent = incoming_context(context.invocation_metadata())
            span = tracer_.start_span(method, context=parent, kind=SpanKind.SERVER,
                                      attributes=attributes)
            return start, peer, span, trace.set_span_in_context(span, parent)

        def unary(behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            async def wrapper(request: Any, context: Any) -> Any:
                start, peer, span, current = begin(context)
                # Current for the handler (its logs carry the ids, its calls
                # propagate them) and for the access log line in finish().
                token = otel_context.attach(current)
                err: BaseException | None = None
                try:
                    return await behavior(request, context)
                except BaseException as e:
                    err = e
                    _failed(span, e)
                    raise
                finally:
                    try:
                        finish(context, peer, start, err)
                    finally:
                        otel_context.detach(token)
                        span.end()

            return wrapper

        def stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
            if inspect.iscoroutinefunction(behavior):
                # Writer-style stream handlers (Health/Watch) are coroutines
                # that ``context.write``; iterating them would fail the call.
                return unary(behavior)

            async def wrapper(request: Any, context: Any) -> Any:
                start, peer, span, current = begin(context)
                err: BaseException | None = None
                items = behavior(request, context)
                try:
                    while True:
                        token = otel_context.attach(current)
                        try:
                            item = await items.__anext__()
                        except StopAsyncIteration:
                            break
                        finally:
                            otel_context.detach(token)
                        yield item
                except BaseException as e:
                    err = e
                    _failed(span, e)
                    raise
                finally:
                    # Closed at a yield (the call was cancelled): close the
                    # handler's generator now, so its cleanup runs here and
                    # not whenever the garbage collector gets to it.
                    with contextlib.suppress(Exception):
                        await items.aclose()
                    span.end()
                    finish(context, peer, start, err)

            return wrapper

        kw = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), **kw)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(stream(handler.unary_stream), **kw)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(unary(handler.stream_unary), **kw)
        if handler.stream_stream:
            return grpc.stream_stream_rpc_method_handler(stream(handler.stream_stream), **kw)
        return handler


def _failed(span: trace.Span, err: BaseException) -> None:
    """What ``use_span`` records on a span a call's error leaves: only a
    recording span (an exporter listens) is worth the formatting."""
    if not span.is_recording():
        return
    if isinstance(err, Exception):
        span.record_exception(err)
    span.set_status(Status(StatusCode.ERROR, str(err)[:200]))

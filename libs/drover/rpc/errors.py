"""Outbound: the one place where drover errors become gRPC statuses.

Servers raise :class:`drover.errors.DroverError` subclasses; the
:class:`ErrorInterceptor` (installed by :mod:`drover.rpc.server`) turns them
into a status with a google.rpc.ErrorInfo detail (reason, domain ``drover``,
metadata) and, for :class:`~drover.errors.NotLeader`, the ``drover-leader``
trailing metadata the proxy follows. Clients read them back with
:mod:`drover.rpc.remote` (the inbound half).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from drover.coord.deadline import caller_deadline
from drover.errors import DOMAIN, DroverError, Internal, InvalidArgument, Kind, NotLeader
from drover.remote_errors import LEADER_METADATA, LEADER_TERM_METADATA
from drover.rpc.wrapping import WrappingInterceptor
from drover.validation import check_request

__all__ = ["ErrorInterceptor", "abort", "relay", "rpc_code", "status_code", "to_status"]

log = logging.getLogger(__name__)


_CODES: dict[Kind, grpc.StatusCode] = {
    Kind.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Kind.FAILED_PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Kind.ABORTED: grpc.StatusCode.ABORTED,
    Kind.OUT_OF_RANGE: grpc.StatusCode.OUT_OF_RANGE,
    Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Kind.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    Kind.RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Kind.INTERNAL: grpc.StatusCode.INTERNAL,
    Kind.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Kind.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
}


def status_code(kind: Kind) -> grpc.StatusCode:
    return _CODES[kind]


def rpc_code(err: DroverError) -> int:
    """The google.rpc.Code number of ``err``: for per-item outcomes of batch calls."""
    return int(getattr(code_pb2, _CODES[err.kind].name))


#: Byte budgets of what an error puts in trailing metadata. The message
#: travels twice (``grpc-message``, percent-encoded, and inside
#: ``grpc-status-details-bin``, base64), so with these caps a status stays
#: under ~4 KiB, far below gRPC's 8 KiB default metadata limit, whatever the
#: request held: past that limit the status itself is lost and the client
#: sees RESOURCE_EXHAUSTED instead of the real answer.
MESSAGE_BYTES = 512
METADATA_ENTRIES = 8
METADATA_KEY_BYTES = 64
METADATA_BYTES = 512


def _cut(text: str, limit: int) -> str:
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    return raw[: max(0, limit - 3)].decode("utf-8", "ignore") + "..."


def bounded_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """At most METADATA_ENTRIES entries and METADATA_BYTES of values."""
    out: dict[str, str] = {}
    budget = METADATA_BYTES
    for key, value in list(metadata.items())[:METADATA_ENTRIES]:
        value = _cut(str(value), max(0, min(budget, 256)))
        budget -= len(value.encode("utf-8", "replace"))
        out[_cut(str(key), METADATA_KEY_BYTES)] = value
    return out


def bounded_message(message: str) -> str:
    return _cut(message, MESSAGE_BYTES)


def to_status(err: DroverError) -> tuple[grpc.Status, tuple[tuple[str, str], ...]]:
    """The rich status for ``err`` plus extra trailing metadata; message and
    metadata are cut to the byte budgets above."""
    info = error_details_pb2.ErrorInfo(reason=err.reason, domain=DOMAIN,
                                       metadata=bounded_metadata(err.metadata))
    detail = status_pb2.Status(code=rpc_code(err), message=bounded_message(err.message))
    detail.details.add().Pack(info)
    status = rpc_status.to_status(detail)
    extra: tuple[tuple[str, str], ...] = ()
    if isinstance(err, NotLeader) and err.leader:
        extra = ((LEADER_METADATA, _cut(err.leader, 256)),)
        if err.term:
            extra += ((LEADER_TERM_METADATA, str(err.term)),)
        status = _RichStatus(status.code, status.details, (*status.trailing_metadata, *extra))
    return status, extra


def as_rpc_error(err: DroverError) -> grpc.aio.AioRpcError:
    """``err`` as the error a gRPC call raises (code, message, ErrorInfo in
    the trailing metadata): what a client-side wrapper raises for a failure
    it decided itself (the failover channel's hold), so its callers handle
    it as any server's answer."""
    status, _ = to_status(err)
    return grpc.aio.AioRpcError(status.code, grpc.aio.Metadata(),
                                grpc.aio.Metadata(*status.trailing_metadata), status.details)


class _RichStatus(grpc.Status):
    """A status whose trailing metadata holds details plus drover headers."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing: tuple[Any, ...]) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing


async def relay(context: grpc.aio.ServicerContext[Any, Any], err: grpc.aio.AioRpcError) -> None:
    """End the call with another server's status as it came: code, details
    and trailing metadata (ErrorInfo and drover headers) unchanged (never
    returns). What a forwarding proxy answers when it passes an error on."""
    await context.abort(err.code(), err.details() or "", tuple(err.trailing_metadata() or ()))


async def abort(context: grpc.aio.ServicerContext[Any, Any], err: DroverError) -> None:
    """Abort the call with ``err`` mapped to its status (never returns)."""
    status, _ = to_status(err)
    await context.abort_with_status(status)


Handler = Callable[..., Awaitable[Any]]


class _Undecodable:
    """What a request that does not parse as its message type becomes: the
    handler wrapper answers INVALID_ARGUMENT instead of gRPC's INTERNAL
    ("Exception deserializing request"). Interceptors that run before the
    wrapper (the access check reads namespaces off the request) see an
    empty message of the right type: every field at its default."""

    def __init__(self, empty: Any, type_name: str, error: str) -> None:
        self._empty, self.type_name, self.error = empty, type_name, error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._empty, name)


def _safe_deserializer(deserialize: Callable[[bytes], Any] | None) -> Any:
    if deserialize is None:
        return None

    def wrapped(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # DecodeError, RecursionError: the client's fault
            owner = getattr(deserialize, "__self__", None)
            name = getattr(owner, "__name__", "message")
            empty = owner() if isinstance(owner, type) else None
            return _Undecodable(empty, name, type(exc).__name__)

    return wrapped


def _admit(request: Any) -> None:
    """Refuse an undecodable or invalid request before any handler runs."""
    if isinstance(request, _Undecodable):
        raise InvalidArgument(
            f"request is not a valid {request.type_name} ({request.error})",
            metadata={"field": "request"})
    check_request(request)


async def _unexpected(context: grpc.aio.ServicerContext[Any, Any], exc: Exception) -> None:
    # A bug, not the client's fault: log it whole, answer INTERNAL without
    # echoing anything (gRPC would say UNKNOWN with the exception's text).
    log.error("unhandled error in a handler", exc_info=exc)
    await abort(context, Internal("internal error; see the server log"))


def _inner_deadline(remaining: float | None) -> float | None:
    if remaining is None:
        return None
    return remaining - min(0.25, remaining * 0.2)


@asynccontextmanager
async def _answering(request: Any, context: grpc.aio.ServicerContext[Any, Any], *,
                     admit: bool) -> AsyncIterator[None]:
    """One handler call (the request admitted first when ``admit``): a
    DroverError it raises is answered as its status, anything unexpected as
    INTERNAL; a status already set passes through."""
    try:
        if admit:
            _admit(request)
        yield
    except DroverError as err:
        await abort(context, err)
    except (grpc.aio.AbortError, NotImplementedError):
        raise  # already a status (generated stubs set UNIMPLEMENTED first)
    except Exception as exc:
        await _unexpected(context, exc)


def _wrap_unary(behavior: Handler, *, admit: bool) -> Handler:
    async def wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        async with _answering(request, context, admit=admit):
            # etcd calls made for this request end by the client's deadline,
            # with a margin so the client still hears why (OUTCOME_UNKNOWN).
            with caller_deadline(_inner_deadline(context.time_remaining())):
                return await behavior(request, context)

    return wrapper


def _wrap_stream(behavior: Callable[..., Any], *, admit: bool) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(behavior):
        # A writer-style stream handler (``await context.write(...)``, returns
        # None), like grpc.health.v1.Health/Watch: wrap it as a coroutine, so
        # grpc keeps driving it as one.
        return _wrap_unary(behavior, admit=admit)

    async def wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        async with _answering(request, context, admit=admit):
            async for item in behavior(request, context):
                yield item

    return wrapper


class ErrorInterceptor(WrappingInterceptor):
    """Checks every unary request (:func:`drover.validation.check_request`)
    and maps :class:`DroverError` raised by any handler to its status."""

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        return wrap_errors(handler)


def wrap_errors(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """``handler`` with its requests admitted and its errors mapped."""
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(
            _wrap_unary(handler.unary_unary, admit=True),
            request_deserializer=_safe_deserializer(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(
            _wrap_stream(handler.unary_stream, admit=True),
            request_deserializer=_safe_deserializer(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(
            _wrap_unary(handler.stream_unary, admit=False),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.stream_stream:
        return grpc.stream_stream_rpc_method_handler(
            _wrap_stream(handler.stream_stream, admit=False),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return handler

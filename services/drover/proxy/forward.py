"""Byte-for-byte forwarding of every drover RPC to a backend server.

One :class:`grpc.GenericRpcHandler` answers every method of every backend
service (state, eval broker, deployment watcher), taken from the generated
descriptors, with identity serializers: requests and responses stay bytes,
so the proxy never parses a message and forwards methods it was not built
with as long as the descriptors know them.

Per call:

* the server comes from the service's :class:`~drover.proxy.server_list.ServerList`
  (leader first for leader-only services);
* the caller's metadata (minus transport headers) and remaining deadline go
  along; the backend's initial and trailing metadata and status come back,
  trailing ``grpc-status-details-bin`` included, so ErrorInfo survives;
* a failure is classified (:mod:`drover.proxy.failure`) and the pure policy
  (:func:`drover.proxy.retry.decide_retry`) says whether to follow a leader
  hint, try the next server or give up. Retries run under tenacity, within
  the caller's deadline and at most ``servers + 2`` attempts (hints could
  point in a circle);
* streams are retried only until their first response message: after that
  the client has seen data and resumes itself. Client-streaming methods (none
  in the drover API today) get one attempt, the request stream being
  consumed as it is sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn, Protocol

import grpc
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.stop import stop_base

from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.errors import DroverError
from drover.proxy.errors import NoServer
from drover.proxy.failure import classify
from drover.proxy.retry import RetryAction, RetryDecision, decide_retry
from drover.proxy.server import Server
from drover.proxy.server_list import ServerList

log = logging.getLogger(__name__)

#: Backend membership name -> the generated modules describing its services
#: (the state replicas also host the ACL service).
BACKEND_MODULES: Mapping[str, tuple[ModuleType, ...]] = {
    "state": (state_pb2, acl_pb2),
    "broker": (broker_pb2,),
    "deployments": (deployments_pb2,),
}

#: Request headers that belong to the caller's hop, not to the call.
HOP_HEADERS = frozenset({"user-agent", "content-type", "te", "host", "grpc-timeout"})

#: Backoff before trying the next server; a followed leader hint is tried at once.
RETRY_BACKOFF_BASE = 0.01
RETRY_BACKOFF_MAX = 0.2


@dataclass(frozen=True)
class ForwardedMethod:
    path: str  # /drover.state.v1.StateService/GetJob
    backend: str  # membership name: state, broker, deployments
    client_streaming: bool
    server_streaming: bool


def forwarded_methods(
    modules: Mapping[str, tuple[ModuleType, ...]] = BACKEND_MODULES,
) -> dict[str, ForwardedMethod]:
    out: dict[str, ForwardedMethod] = {}
    for backend, group in modules.items():
        for svc in (s for m in group for s in m.DESCRIPTOR.services_by_name.values()):
            for m in svc.methods:
                path = f"/{svc.full_name}/{m.name}"
                out[path] = ForwardedMethod(path, backend, m.client_streaming, m.server_streaming)
    return out


def forwarded_service_names(
    modules: Mapping[str, tuple[ModuleType, ...]] = BACKEND_MODULES,
) -> list[str]:
    return [svc.full_name for group in modules.values() for m in group
            for svc in m.DESCRIPTOR.services_by_name.values()]


def forwardable(metadata: Iterable[tuple[str, Any]] | None) -> tuple[tuple[str, Any], ...]:
    """The caller's metadata without pseudo and transport headers."""
    return tuple(
        (k, v)
        for k, v in metadata or ()
        if not k.startswith(":") and not k.startswith("grpc-") and k not in HOP_HEADERS
    )


class Lists(Protocol):
    def get(self, service: str) -> ServerList: ...


class Channels(Protocol):
    def get(self, address: str) -> grpc.aio.Channel: ...


class _Retry(Exception):
    def __init__(self, error: grpc.aio.AioRpcError | DroverError, follow: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.follow = follow


class _Final(Exception):
    def __init__(self, error: grpc.aio.AioRpcError | DroverError) -> None:
        super().__init__(str(error))
        self.error = error


def _wait(state: RetryCallState) -> float:
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    if isinstance(exc, _Retry) and exc.follow:
        return 0.0
    return min(RETRY_BACKOFF_MAX, RETRY_BACKOFF_BASE * 2 ** (state.attempt_number - 1))


class Forwarder:
    """Forwards calls for every backend method; see the module docstring."""

    def __init__(
        self,
        lists: Lists,
        channels: Channels,
        *,
        clock: Callable[[], float] = time.monotonic,
        modules: Mapping[str, tuple[ModuleType, ...]] = BACKEND_MODULES,
    ) -> None:
        self._lists = lists
        self._channels = channels
        self._clock = clock
        self.methods = forwarded_methods(modules)
        self._handlers = {path: self._handler(m) for path, m in self.methods.items()}

    # -- the generic handler ------------------------------------------------

    def generic_handler(self, service: str = "") -> grpc.GenericRpcHandler:
        """The handler for the methods of ``service`` (full name; empty: all)."""
        handlers = {
            path: h for path, h in self._handlers.items()
            if not service or path.startswith(f"/{service}/")
        }

        class _Handler(grpc.GenericRpcHandler):
            def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
                return handlers.get(details.method)  # type: ignore[attr-defined]

        return _Handler()

    def _handler(self, m: ForwardedMethod) -> grpc.RpcMethodHandler:
        if not m.client_streaming and not m.server_streaming:

            async def uu(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
                return await self._unary_unary(m, request, context)

            return grpc.unary_unary_rpc_method_handler(uu)
        if not m.client_streaming:

            def us(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                return self._unary_stream(m, request, context)

            return grpc.unary_stream_rpc_method_handler(us)
        if not m.server_streaming:

            async def su(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
                return await self._stream_unary(m, requests, context)

            return grpc.stream_unary_rpc_method_handler(su)

        def ss(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            return self._stream_stream(m, requests, context)

        return grpc.stream_stream_rpc_method_handler(ss)

    # -- attempts -----------------------------------------------------------

    def _deadline(self, context: grpc.aio.ServicerContext[Any, Any]) -> float | None:
        remaining = context.time_remaining()
        return None if remaining is None else self._clock() + remaining

    def _timeout(self, deadline: float | None) -> float | None:
        return None if deadline is None else max(0.001, deadline - self._clock())

    def _retrying(self, lst: ServerList, deadline: float | None) -> AsyncRetrying:
        clock = self._clock

        class _PastDeadline(stop_base):
            def __call__(self, retry_state: RetryCallState) -> bool:
                return deadline is not None and clock() >= deadline

        return AsyncRetrying(
            retry=retry_if_exception_type(_Retry),
            stop=stop_after_attempt(len(lst.servers) + 2) | _PastDeadline(),
            wait=_wait,
            reraise=True,
        )

    def _pick(self, lst: ServerList) -> Server:
        server = lst.pick()
        if server is None:
            raise _Retry(
                NoServer(
                    f"no server known for {lst.service}",
                    metadata={"service": lst.service},
                )
            )
        return server

    def _report(
        self, m: ForwardedMethod, lst: ServerList, server: Server,
        err: grpc.aio.AioRpcError, *, relayed: bool,
    ) -> RetryDecision:
        failure = classify(
            err.code().name, err.details() or "", err.trailing_metadata() or (),
            server=server.address, relayed=relayed,
        )
        decision = decide_retry(m.path, failure)
        if decision.server_failed:
            lst.notify_failed(server)
        log.debug(
            "%s via %s failed (%s): %s -> %s",
            m.path, server.address, failure.kind.value, decision.reason, decision.action.value,
        )
        return decision

    def _failed(
        self, m: ForwardedMethod, lst: ServerList, server: Server,
        err: grpc.aio.AioRpcError, *, relayed: bool,
    ) -> NoReturn:
        decision = self._report(m, lst, server, err, relayed=relayed)
        if decision.action is RetryAction.FOLLOW_LEADER and decision.leader:
            lst.follow_hint(decision.leader)
            raise _Retry(err, follow=True)
        if decision.action is RetryAction.RETRY_NEXT:
            raise _Retry(err)
        raise _Final(err)

    async def _relay_error(
        self, context: grpc.aio.ServicerContext[Any, Any], error: grpc.aio.AioRpcError | DroverError
    ) -> NoReturn:
        if isinstance(error, DroverError):
            raise error
        await context.abort(
            error.code(), error.details() or "", tuple(error.trailing_metadata() or ())
        )
        raise AssertionError("abort returned")  # pragma: no cover

    @staticmethod
    async def _relay_initial(context: grpc.aio.ServicerContext[Any, Any], call: Any) -> None:
        initial = await call.initial_metadata()
        if initial:
            await context.send_initial_metadata(tuple(initial))

    @staticmethod
    async def _relay_trailing(context: grpc.aio.ServicerContext[Any, Any], call: Any) -> None:
        trailing = await call.trailing_metadata()
        if trailing:
            context.set_trailing_metadata(tuple(trailing))

    # -- the four shapes ------------------------------------------------------

    async def _unary_unary(
        self, m: ForwardedMethod, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bytes:
        metadata = forwardable(context.invocation_metadata())
        deadline = self._deadline(context)
        lst = self._lists.get(m.backend)
        try:
            async for attempt in self._retrying(lst, deadline):
                with attempt:
                    server = self._pick(lst)
                    call = self._channels.get(server.address).unary_unary(m.path)(
                        request, metadata=metadata, timeout=self._timeout(deadline)
                    )
                    try:
                        response: bytes = await call
                    except grpc.aio.AioRpcError as err:
                        self._failed(m, lst, server, err, relayed=False)
                    lst.notify_ok(server)
                    await self._relay_initial(context, call)
                    await self._relay_trailing(context, call)
                    return response
        except (_Retry, _Final) as e:
            await self._relay_error(context, e.error)
        raise AssertionError("retry loop ended without an outcome")  # pragma: no cover

    async def _open_stream(
        self, m: ForwardedMethod, lst: ServerList, request: bytes,
        metadata: tuple[tuple[str, Any], ...], deadline: float | None,
    ) -> tuple[Any, Server, Any]:
        """Open the stream on some server and read its first message (or EOF)."""
        async for attempt in self._retrying(lst, deadline):
            with attempt:
                server = self._pick(lst)
                call = self._channels.get(server.address).unary_stream(m.path)(
                    request, metadata=metadata, timeout=self._timeout(deadline)
                )
                try:
                    first = await call.read()
                except grpc.aio.AioRpcError as err:
                    self._failed(m, lst, server, err, relayed=False)
                lst.notify_ok(server)
                return call, server, first
        raise AssertionError("retry loop ended without an outcome")  # pragma: no cover

    async def _unary_stream(
        self, m: ForwardedMethod, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        metadata = forwardable(context.invocation_metadata())
        deadline = self._deadline(context)
        lst = self._lists.get(m.backend)
        try:
            call, server, message = await self._open_stream(m, lst, request, metadata, deadline)
        except (_Retry, _Final) as e:
            await self._relay_error(context, e.error)
        try:
            await self._relay_initial(context, call)
            while message is not grpc.aio.EOF:
                yield message
                try:
                    message = await call.read()
                except grpc.aio.AioRpcError as err:
                    try:
                        self._failed(m, lst, server, err, relayed=True)
                    except (_Retry, _Final) as e:
                        await self._relay_error(context, e.error)
            await self._relay_trailing(context, call)
        finally:
            call.cancel()  # the client went away: end the backend stream too

    async def _stream_unary(
        self, m: ForwardedMethod, requests: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bytes:
        lst = self._lists.get(m.backend)
        server = lst.pick()
        if server is None:
            raise NoServer(f"no server known for {lst.service}", metadata={"service": lst.service})
        call = self._channels.get(server.address).stream_unary(m.path)(
            requests,
            metadata=forwardable(context.invocation_metadata()),
            timeout=self._timeout(self._deadline(context)),
        )
        try:
            response: bytes = await call
        except grpc.aio.AioRpcError as err:
            # The request stream is consumed: nothing to retry with.
            self._report(m, lst, server, err, relayed=True)
            await self._relay_error(context, err)
        lst.notify_ok(server)
        await self._relay_initial(context, call)
        await self._relay_trailing(context, call)
        return response

    async def _stream_stream(
        self, m: ForwardedMethod, requests: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        lst = self._lists.get(m.backend)
        server = lst.pick()
        if server is None:
            raise NoServer(f"no server known for {lst.service}", metadata={"service": lst.service})
        call = self._channels.get(server.address).stream_stream(m.path)(
            requests,
            metadata=forwardable(context.invocation_metadata()),
            timeout=self._timeout(self._deadline(context)),
        )
        try:
            await self._relay_initial(context, call)
            while True:
                try:
                    message = await call.read()
                except grpc.aio.AioRpcError as err:
                    self._report(m, lst, server, err, relayed=True)
                    await self._relay_error(context, err)
                if message is grpc.aio.EOF:
                    break
                yield message
            await self._relay_trailing(context, call)
        finally:
            call.cancel()

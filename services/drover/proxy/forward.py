"""Byte-for-byte forwarding of every drover RPC to a backend server.

One :class:`grpc.GenericRpcHandler` answers every method of every backend
service (state, eval broker, deployment watcher), taken from the generated
descriptors, with identity serializers: requests and responses stay bytes,
so the proxy never parses a message and forwards methods it was not built
with as long as the descriptors know them.

Per call:

* the server comes from the service's :class:`~drover.proxy.core.server_list.ServerList`
  (leader first for leader-only services);
* the caller's metadata (minus transport headers) and remaining deadline go
  along; the backend's initial and trailing metadata and status come back,
  trailing ``grpc-status-details-bin`` included, so ErrorInfo survives;
* a failure is classified (:mod:`drover.proxy.core.failure`) and the pure policy
  (:func:`drover.proxy.core.retry.decide_retry`) says whether to follow a leader
  hint, try the next server or give up (:mod:`drover.proxy.outcome` applies
  it to the attempt). Retries run under tenacity, within
  the caller's deadline and at most ``servers + 2`` attempts (hints could
  point in a circle);
* every attempt is held only while its server shows life
  (:mod:`drover.rpc.hold`): a server that stops answering, or leaves
  membership, ends its attempts at once; a read then goes to the next
  server, a write is answered UNAVAILABLE ``OUTCOME_UNKNOWN`` (it may have
  been applied), within the hold timeout, whatever the caller's deadline;
* streams are retried only until their first response message, except
  ``Subscribe``, which is resumed on another replica from the last index
  delivered (:mod:`drover.rpc.resume`), or ended with a status the client
  can act on. Client-streaming methods (none in the drover API today) get
  one attempt, the request stream being consumed as it is sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from types import ModuleType
from typing import Any, NoReturn, Protocol

import grpc
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.stop import stop_base

from drover.errors import DroverError, clip
from drover.proxy.core.methods import (
    BACKEND_MODULES,
    HOP_HEADERS,
    ForwardedMethod,
    forwardable,
    forwarded_methods,
    forwarded_service_names,
)
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList
from drover.proxy.errors import Final as _Final
from drover.proxy.errors import NoServer, StreamEnded
from drover.proxy.errors import Retry as _Retry
from drover.proxy.outcome import RETRY_BACKOFF_BASE, RETRY_BACKOFF_MAX, next_step, report
from drover.proxy.outcome import backoff as _wait
from drover.rpc.hold import AttemptEnded, Holds
from drover.rpc.resume import RESUMABLE, StreamCursor

log = logging.getLogger(__name__)

__all__ = [
    "BACKEND_MODULES", "HOP_HEADERS", "ForwardedMethod", "Forwarder", "forwardable",
    "forwarded_methods", "forwarded_service_names",
]

class Lists(Protocol):
    def get(self, service: str) -> ServerList: ...


class Channels(Protocol):
    def get(self, address: str) -> grpc.aio.Channel: ...


def _no_server(lst: ServerList) -> NoServer:
    return NoServer(f"no server known for {lst.service}", metadata={"service": lst.service})


class Caller(Protocol):
    """The client's side of a forwarded call, as the forwarder uses it (the
    servicer adapts the gRPC context to it: :mod:`drover.proxy.servicer`)."""

    def time_remaining(self) -> float | None: ...

    def invocation_metadata(self) -> Any: ...

    async def send_initial_metadata(self, metadata: Any) -> None: ...

    def set_trailing_metadata(self, metadata: Any) -> None: ...

    async def relay(self, error: grpc.aio.AioRpcError) -> None:
        """End the call with ``error``'s status as it came (never returns)."""


class Forwarder:
    """Forwards calls for every backend method; see the module docstring."""

    def __init__(
        self,
        lists: Lists,
        channels: Channels,
        *,
        holds: Holds,
        clock: Callable[[], float] = time.monotonic,
        modules: Mapping[str, tuple[ModuleType, ...]] = BACKEND_MODULES,
    ) -> None:
        self._lists = lists
        self._channels = channels
        self.holds = holds
        self._clock = clock
        self.methods = forwarded_methods(modules)
        # Attempts retried elsewhere, by service and how (metrics):
        # "next_server" (a failover) or "follow_leader" (a leader hint).
        self.retries: dict[tuple[str, str], int] = {}
        #: Streams resumed on another server after delivering, by service (metrics).
        self.resumes: dict[str, int] = {}

    # -- attempts -----------------------------------------------------------

    def _deadline(self, caller: Caller) -> float | None:
        remaining = caller.time_remaining()
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
            raise _Retry(_no_server(lst))
        return server

    def _call_once(
        self, m: ForwardedMethod, requests: Any, caller: Caller,
        shape: Callable[[grpc.aio.Channel], Any],
    ) -> tuple[ServerList, Server, Any]:
        """Open a client-streaming call on the server in use, for one attempt only.

        ``shape`` picks the channel's multi-callable (``stream_unary`` or
        ``stream_stream``); the request stream is consumed once, so there is
        nothing to retry with.
        """
        lst = self._lists.get(m.backend)
        server = lst.pick()
        if server is None:
            raise _no_server(lst)
        call = shape(self._channels.get(server.address))(
            requests,
            metadata=forwardable(caller.invocation_metadata()),
            timeout=self._timeout(self._deadline(caller)),
        )
        return lst, server, call

    def _count(self, service: str, how: str) -> None:
        key = (service, how)
        self.retries[key] = self.retries.get(key, 0) + 1

    def _failed(
        self, m: ForwardedMethod, lst: ServerList, server: Server,
        err: grpc.aio.AioRpcError | None, *, relayed: bool,
        ended: AttemptEnded | None = None,
    ) -> NoReturn:
        """Raise what the retry loop does next after a failed attempt."""
        next_step(m.path, lst, server, err, relayed=relayed, ended=ended, count=self._count)

    async def _relay_error(
        self, caller: Caller, error: grpc.aio.AioRpcError | DroverError
    ) -> NoReturn:
        if isinstance(error, DroverError):
            raise error
        await caller.relay(error)
        raise AssertionError("relay returned")  # pragma: no cover

    @staticmethod
    async def _relay_initial(caller: Caller, call: Any) -> None:
        initial = await call.initial_metadata()
        if initial:
            await caller.send_initial_metadata(tuple(initial))

    @staticmethod
    async def _relay_trailing(caller: Caller, call: Any) -> None:
        trailing = await call.trailing_metadata()
        if trailing:
            caller.set_trailing_metadata(tuple(trailing))

    # -- the four shapes ------------------------------------------------------

    async def unary_unary(
        self, m: ForwardedMethod, request: bytes, caller: Caller
    ) -> bytes:
        metadata = forwardable(caller.invocation_metadata())
        deadline = self._deadline(caller)
        lst = self._lists.get(m.backend)
        try:
            async for attempt in self._retrying(lst, deadline):
                with attempt:
                    server = self._pick(lst)
                    call = self._channels.get(server.address).unary_unary(m.path)(
                        request, metadata=metadata, timeout=self._timeout(deadline)
                    )
                    with self.holds.attempt(server.address) as held:
                        try:
                            response: bytes = await self.holds.wait(held, call)
                        except grpc.aio.AioRpcError as err:
                            self._failed(m, lst, server, err, relayed=False)
                        except AttemptEnded as ended:
                            call.cancel()
                            self._failed(m, lst, server, None, relayed=False, ended=ended)
                    lst.notify_ok(server)
                    await self._relay_initial(caller, call)
                    await self._relay_trailing(caller, call)
                    return response
        except (_Retry, _Final) as e:
            await self._relay_error(caller, e.error)
        raise AssertionError("retry loop ended without an outcome")  # pragma: no cover

    async def unary_stream(
        self, m: ForwardedMethod, request: bytes, caller: Caller
    ) -> AsyncIterator[bytes]:
        """Relay a server stream; a resumable one survives its server.

        Attempts are bounded like unary ones (servers + 2 in a row without a
        delivered message, and the caller's deadline); delivering a message
        renews the budget, since the stream made progress.
        """
        metadata = forwardable(caller.invocation_metadata())
        deadline = self._deadline(caller)
        lst = self._lists.get(m.backend)
        cursor = (StreamCursor(request, heartbeat=self.holds.hold / 2)
                  if m.path in RESUMABLE else None)
        relayed = False  # messages reached the client (initial metadata too)
        budget = len(lst.servers) + 2
        error: grpc.aio.AioRpcError | DroverError | None = None
        failures = 0
        while True:
            if budget <= 0 or (deadline is not None and self._clock() >= deadline):
                assert error is not None
                if cursor is not None and relayed:
                    cause = (error.message if isinstance(error, DroverError)
                             else error.details() or error.code().name)
                    error = StreamEnded(
                        f"the stream could not be resumed after index {cursor.delivered}: "
                        f"{clip(cause)}; subscribe again from index {cursor.delivered}",
                        metadata={"index": str(cursor.delivered)},
                    )
                await self._relay_error(caller, error)
            if failures:
                await asyncio.sleep(min(RETRY_BACKOFF_MAX, RETRY_BACKOFF_BASE * 2 ** failures))
            budget -= 1
            server = lst.pick()
            if server is None:
                error = _no_server(lst)
                failures += 1
                continue
            sent = cursor.resume_request() if cursor is not None else request
            call = self._channels.get(server.address).unary_stream(m.path)(
                sent, metadata=metadata, timeout=self._timeout(deadline)
            )
            try:
                with self.holds.attempt(server.address) as held:
                    first = True
                    while True:
                        try:
                            message = await self.holds.wait(held, call.read())
                        except (grpc.aio.AioRpcError, AttemptEnded) as e:
                            err = e if isinstance(e, grpc.aio.AioRpcError) else None
                            ended = e if isinstance(e, AttemptEnded) else None
                            if ended is not None:
                                call.cancel()
                            if cursor is not None and err is not None and (
                                err.code() is grpc.StatusCode.CANCELLED
                            ):
                                # Our client's cancellation ends this generator,
                                # never here: a backend shutting down cancelled it.
                                ended = AttemptEnded(server.address, "the server cancelled")
                                err = None
                            try:
                                self._failed(m, lst, server, err,
                                             relayed=relayed and cursor is None, ended=ended)
                            except _Retry as r:
                                error, failures = r.error, failures + 1
                                if cursor is not None and relayed:
                                    cursor.resumes += 1
                                    self.resumes[lst.service] = (
                                        self.resumes.get(lst.service, 0) + 1)
                                    log.info("%s: resuming after index %d (%s)", m.path,
                                             cursor.delivered, server.address)
                                break
                            except _Final as f:
                                await self._relay_error(caller, f.error)
                        if first:
                            lst.notify_ok(server)
                            first = False
                        if message is grpc.aio.EOF:
                            if not relayed:
                                await self._relay_initial(caller, call)
                            await self._relay_trailing(caller, call)
                            return
                        if cursor is not None and not cursor.admit(message):
                            continue
                        if not relayed:
                            await self._relay_initial(caller, call)
                            relayed = True
                        budget, failures = len(lst.servers) + 2, 0
                        yield message
            finally:
                call.cancel()  # ended, failed over, or the client went away

    async def stream_unary(
        self, m: ForwardedMethod, requests: Any, caller: Caller
    ) -> bytes:
        lst, server, call = self._call_once(
            m, requests, caller, lambda channel: channel.stream_unary(m.path))
        try:
            response: bytes = await call
        except grpc.aio.AioRpcError as err:
            # The request stream is consumed: nothing to retry with.
            report(m.path, lst, server, err, relayed=True)
            await self._relay_error(caller, err)
        lst.notify_ok(server)
        await self._relay_initial(caller, call)
        await self._relay_trailing(caller, call)
        return response

    async def stream_stream(
        self, m: ForwardedMethod, requests: Any, caller: Caller
    ) -> AsyncIterator[bytes]:
        lst, server, call = self._call_once(
            m, requests, caller, lambda channel: channel.stream_stream(m.path))
        try:
            await self._relay_initial(caller, call)
            while True:
                try:
                    message = await call.read()
                except grpc.aio.AioRpcError as err:
                    report(m.path, lst, server, err, relayed=True)
                    await self._relay_error(caller, err)
                if message is grpc.aio.EOF:
                    break
                yield message
            await self._relay_trailing(caller, call)
        finally:
            call.cancel()

"""A client channel over several addresses: random order, failover that is safe.

``--address``/``DROVER_ADDR`` may list several servers (``a:7100,b:7100``,
e.g. every proxy replica). :func:`client_channel` gives a :class:`FailoverChannel` for one
address or several (one address gets the hold and resumed streams too).

The rules, per call (the invariants):

* Addresses are tried in a random order (shuffled once per channel, so a
  fleet of CLIs spreads over the replicas); an address a call could not use
  moves to the back, so later calls of the same command start on one that
  worked.
* An address is *used* only once its connection is READY: a server that
  refuses connections (or, within a bound, never finishes the handshake, as
  a frozen process does) is skipped before anything is sent to it. Until a
  request is sent its outcome is known (nothing happened), so skipping is
  safe for reads and writes alike.
* Once a request was sent, a read (:func:`drover.rpc.reads.is_read`) that
  ends UNAVAILABLE is retried on the next address: repeating it is harmless.
  A write is never sent twice: whatever its server answered (UNAVAILABLE
  included: it may have been applied) is the caller's answer.
* The caller's ``timeout`` bounds the whole call, every attempt included.
* Silence is bounded like the proxy's (:mod:`drover.rpc.hold`, ``hold``,
  default 3 s): a server that stops answering mid-call (frozen: its
  sockets stay open) is pinged, and without an answer the attempt ends
  there: a read moves on to the next address (UNAVAILABLE ``HOLD_TIMEOUT``
  when it was the last), a write is UNAVAILABLE ``OUTCOME_UNKNOWN``, never
  the caller's whole timeout. The CLI, the worker and simulated nodes get
  this with one ``--address`` as with several.

Server streams open on the first address whose connection is READY, and
each message awaited is bounded by the hold like a unary attempt. A
Subscribe is resumed (:mod:`drover.rpc.resume`): reopened on the next
address (the same one, if it is the only one) from the last index
delivered when its server fails or goes silent.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

import grpc

from drover.config import TlsFiles
from drover.rpc.channels import TokenSource, channel
from drover.rpc.errors import as_rpc_error
from drover.rpc.hold import (
    DEFAULT_HOLD,
    AttemptEnded,
    HoldOutcomeUnknown,
    Holds,
    HoldTimeout,
    health_probe,
)
from drover.rpc.reads import is_read
from drover.rpc.resume import RESUMABLE, RESUME_BACKOFF, StreamCursor

__all__ = ["FailoverChannel", "client_channel", "split_addresses"]

#: How long one address may take to connect before the next is tried.
CONNECT_BOUND = 2.0


def split_addresses(address: str) -> list[str]:
    """``a:1, b:2`` -> ``["a:1", "b:2"]`` (blanks and repeats dropped)."""
    return list(dict.fromkeys(a.strip() for a in address.split(",") if a.strip()))


class FailoverChannel:
    """Quacks like the part of :class:`grpc.aio.Channel` stubs use."""

    def __init__(self, addresses: Sequence[str], *, tls: TlsFiles | None = None,
                 token: TokenSource | None = None, rng: random.Random | None = None,
                 connect_bound: float = CONNECT_BOUND, hold: float = DEFAULT_HOLD) -> None:
        if not addresses:
            raise ValueError("no address")
        order = list(addresses)
        (rng or random.Random()).shuffle(order)
        self.order = order
        self._channels = {a: channel(a, tls=tls, token=token) for a in order}
        self._connect_bound = connect_bound
        #: Every unary attempt, bounded by the hold (module doc).
        self.holds = Holds(health_probe(self._channels.__getitem__), hold)

    # -- the grpc.aio.Channel surface stubs use ---------------------------
    def unary_unary(self, method: str, request_serializer: Any = None,
                    response_deserializer: Any = None, _registered_method: bool = False,
                    ) -> Any:
        return _Unary(self, method, request_serializer, response_deserializer)

    def unary_stream(self, method: str, request_serializer: Any = None,
                     response_deserializer: Any = None, _registered_method: bool = False,
                     ) -> Any:
        return _Stream(self, method, request_serializer, response_deserializer)

    async def close(self, grace: float | None = None) -> None:
        await self.holds.close()
        for ch in self._channels.values():
            await ch.close(grace)

    async def __aenter__(self) -> FailoverChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- choosing ----------------------------------------------------------
    def _demote(self, address: str) -> None:
        if address in self.order:
            self.order.remove(address)
            self.order.append(address)

    async def _ready(self, address: str, deadline: float | None) -> bool:
        """Whether ``address`` connects within the bound (and the deadline)."""
        ch = self._channels[address]
        end = time.monotonic() + self._connect_bound
        if deadline is not None:
            end = min(end, deadline)
        state = ch.get_state(try_to_connect=True)
        while state != grpc.ChannelConnectivity.READY:
            if state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE,
                         grpc.ChannelConnectivity.SHUTDOWN):
                return False
            left = end - time.monotonic()
            if left <= 0:
                return False
            try:
                async with asyncio.timeout(left):
                    await ch.wait_for_state_change(state)
            except TimeoutError:
                return False
            state = ch.get_state(try_to_connect=True)
        return True

    async def _connected(self, deadline: float | None) -> list[str]:
        """The addresses in order, READY ones first (a dead one is demoted);
        when none connects, all of them (the call then fails with the
        transport's own status)."""
        for address in list(self.order):
            if await self._ready(address, deadline):
                return [a for a in self.order if a == address] + [
                    a for a in self.order if a != address]
            self._demote(address)
            if deadline is not None and time.monotonic() >= deadline:
                break
        return list(self.order)


class _Unary:
    def __init__(self, owner: FailoverChannel, method: str, ser: Any, de: Any) -> None:
        self._owner, self._method, self._ser, self._de = owner, method, ser, de

    def __call__(self, request: Any, *, timeout: float | None = None, **kwargs: Any) -> Any:
        return self._call(request, None if timeout is None else time.monotonic() + timeout,
                          kwargs)

    async def _call(self, request: Any, deadline: float | None, kwargs: dict[str, Any]) -> Any:
        owner = self._owner
        order = await owner._connected(deadline)
        read = is_read(self._method)
        for i, address in enumerate(order):
            left = None if deadline is None else max(0.001, deadline - time.monotonic())
            call = owner._channels[address].unary_unary(
                self._method, request_serializer=self._ser, response_deserializer=self._de)
            try:
                with owner.holds.attempt(address) as attempt:
                    return await owner.holds.wait(attempt, call(request, timeout=left, **kwargs))
            except AttemptEnded as ended:
                owner._demote(address)
                if not read:
                    raise as_rpc_error(HoldOutcomeUnknown(
                        f"{address} went silent during {self._method.rsplit('/', 1)[-1]} "
                        f"({ended.reason}); it may have been applied",
                        metadata={"address": address})) from None
                if i == len(order) - 1 or (deadline is not None
                                           and time.monotonic() >= deadline):
                    raise as_rpc_error(HoldTimeout(
                        f"{address} did not answer ({ended.reason})",
                        metadata={"address": address})) from None
            except grpc.aio.AioRpcError as e:
                last = i == len(order) - 1
                if (not read or last or e.code() != grpc.StatusCode.UNAVAILABLE
                        or (deadline is not None and time.monotonic() >= deadline)):
                    raise
                owner._demote(address)
        raise AssertionError("unreachable: the last attempt raises or returns")


class _Stream:
    def __init__(self, owner: FailoverChannel, method: str, ser: Any, de: Any) -> None:
        self._owner, self._method, self._ser, self._de = owner, method, ser, de

    def __call__(self, request: Any, *, timeout: float | None = None, **kwargs: Any) -> Any:
        return _OpenedStream(self, request, timeout, kwargs)


class _OpenedStream:
    """A server stream opened lazily on the first READY address: iterate it,
    ``cancel()`` it, read its ``code()`` like a grpc.aio call.

    Every message awaited is an attempt bounded by the hold; a Subscribe
    (:data:`drover.rpc.resume.RESUMABLE`) whose server fails (UNAVAILABLE,
    cancelled by it) or goes silent is reopened on the next address (the
    same one when there is one) from the last index delivered, until every
    address failed twice in a row without delivering or the deadline passes.
    """

    def __init__(self, spec: _Stream, request: Any, timeout: float | None,
                 kwargs: dict[str, Any]) -> None:
        self._spec, self._request, self._kwargs = spec, request, kwargs
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._call: Any = None
        self._address = ""
        self._cancelled = False
        self._cursor = (StreamCursor(spec._ser(request), heartbeat=spec._owner.holds.hold / 2)
                        if spec._method in RESUMABLE and spec._ser is not None else None)

    async def _open(self) -> Any:
        if self._call is None:
            owner = self._spec._owner
            address = self._address = (await owner._connected(self._deadline))[0]
            left = (None if self._deadline is None
                    else max(0.001, self._deadline - time.monotonic()))
            cursor = self._cursor
            self._call = owner._channels[address].unary_stream(
                self._spec._method,
                request_serializer=None if cursor is not None else self._spec._ser,
                response_deserializer=self._spec._de)(
                    cursor.resume_request() if cursor is not None else self._request,
                    timeout=left, **self._kwargs)
            if self._cancelled:
                self._call.cancel()
        return self._call

    def __aiter__(self) -> Any:
        return self._iterate()

    async def _iterate(self) -> Any:
        owner, cursor = self._spec._owner, self._cursor
        failures = 0
        while True:
            call = await self._open()
            address = self._address
            try:
                with owner.holds.attempt(address) as held:
                    while True:
                        message = await owner.holds.wait(held, call.read())
                        if message is grpc.aio.EOF:
                            return
                        if cursor is not None and not cursor.admit_index(message.index):
                            continue
                        failures = 0
                        yield message
            except AttemptEnded as ended:
                call.cancel()
                error: Exception = as_rpc_error(HoldTimeout(
                    f"{address} did not answer ({ended.reason})", metadata={"address": address}))
            except grpc.aio.AioRpcError as err:
                if cursor is None or self._cancelled or err.code() not in (
                        grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                    raise
                error = err
            owner._demote(address)
            failures += 1
            if (cursor is None or failures > 2 * len(owner.order)
                    or (self._deadline is not None and time.monotonic() >= self._deadline)):
                raise error
            cursor.resumes += 1
            self._call = None
            await asyncio.sleep(min(RESUME_BACKOFF[1], RESUME_BACKOFF[0] * 2 ** failures))

    async def read(self) -> Any:
        return await (await self._open()).read()

    def cancel(self) -> bool:
        self._cancelled = True
        return bool(self._call.cancel()) if self._call is not None else True

    async def code(self) -> Any:
        return await (await self._open()).code()

    async def initial_metadata(self) -> Any:
        return await (await self._open()).initial_metadata()

    async def trailing_metadata(self) -> Any:
        return await (await self._open()).trailing_metadata()

    def done(self) -> bool:
        return self._call is not None and bool(self._call.done())


def client_channel(address: str, *, tls: TlsFiles | None = None,
                   token: TokenSource | None = None) -> FailoverChannel:
    """A :class:`FailoverChannel` over the addresses ``address`` lists
    (comma-separated): one address gets the hold and the stream resumes too."""
    return FailoverChannel(split_addresses(address) or [address], tls=tls, token=token)

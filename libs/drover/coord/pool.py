"""One gRPC channel per etcd endpoint, health-checked, with calls routed to
the endpoint :class:`~drover.coord.endpoints.EndpointHealth` picks.

Why not gRPC's own multi-address target: pick-first moves only when a
connection *closes*; an etcd member that is frozen (SIGSTOP, stalled disk,
blackholed network) keeps its sockets open and every call hangs until its
deadline. Here every endpoint has its own channel; a prober sends each a
``Maintenance.Status`` (good = answered within ``probe_timeout`` with a known
raft leader), and calls and streams in flight on an endpoint that turns bad
are ended at once:

* :meth:`EndpointPool.unary` runs one unary call: an idempotent one is
  retried on the next endpoint within the caller's deadline; a write whose
  request may have reached etcd raises :class:`EtcdOutcomeUnknown` instead of a
  plain unavailable error (it may have been applied);
* :meth:`EndpointPool.open_stream` opens a stream (watch, lease keepalive)
  with etcd's require-leader metadata (``hasleader: true``), so a member cut
  off from its leader ends it with an error instead of going quiet; if its
  endpoint turns bad (or the client moves back to a recovered preferred
  member) the stream ends with UNAVAILABLE and its owner re-opens it, which
  lands on the new current endpoint.

Every stream owner already treats ``AioRpcError`` as "re-open"; an aborted
stream raises exactly that, never a bare ``CancelledError`` (which would be
indistinguishable from the owner's own cancellation).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from aetcd import rpc

from drover.coord.clock import Clock, monotonic
from drover.coord.deadline import bounded
from drover.coord.endpoints import EndpointHealth, HealthConfig
from drover.coord.errors import EtcdOutcomeUnknown, EtcdUnavailable
from drover.tasks import cancel_and_wait

__all__ = ["REQUIRE_LEADER", "Endpoint", "EndpointPool", "Stream"]

log = logging.getLogger(__name__)

#: etcd's require-leader metadata: a member without a leader ends the stream.
REQUIRE_LEADER: tuple[tuple[str, str], ...] = (("hasleader", "true"),)

_STUBS = {
    "kv": rpc.KVStub,
    "lease": rpc.LeaseStub,
    "watch": rpc.WatchStub,
    "maintenance": rpc.MaintenanceStub,
    "cluster": rpc.ClusterStub,
}

# gRPC errors that say "this member cannot serve now" (as opposed to a bad
# request): the endpoint is marked bad and an idempotent call moves on.
_ENDPOINT_FAILURES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _aborted_error(details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
                                grpc.aio.Metadata(), details)


def _never_sent(err: grpc.aio.AioRpcError) -> bool:
    """gRPC failed before any byte of the request left (no connection)."""
    details = (err.details() or "").lower()
    return err.code() == grpc.StatusCode.UNAVAILABLE and (
        "failed to connect" in details or "connection refused" in details)


@dataclass(eq=False)
class Endpoint:
    """One etcd member address (an IP literal; a hostname is resolved to
    one Endpoint per address)."""

    name: str
    channel: grpc.aio.Channel
    stubs: dict[str, Any] = field(default_factory=dict)
    calls: set[Any] = field(default_factory=set)
    streams: set[Stream] = field(default_factory=set)
    aborted: set[int] = field(default_factory=set)

    def stub(self, kind: str) -> Any:
        s = self.stubs.get(kind)
        if s is None:
            s = self.stubs[kind] = _STUBS[kind](self.channel)
        return s


class Stream:
    """A stream call on one endpoint; ends with UNAVAILABLE if aborted."""

    def __init__(self, pool: EndpointPool, ep: Endpoint, call: Any) -> None:
        self._pool = pool
        self.endpoint = ep
        self.call = call
        self._abort: str | None = None

    def abort(self, reason: str) -> None:
        if self._abort is None:
            self._abort = reason
            self.call.cancel()

    def _check(self) -> None:
        if self._abort is not None:
            raise _aborted_error(f"etcd endpoint {self.endpoint.name}: {self._abort}")

    def _owner_cancelling(self) -> bool:
        task = asyncio.current_task()
        return task is not None and task.cancelling() > 0

    async def write(self, request: Any) -> None:
        self._check()
        try:
            await self.call.write(request)
        except asyncio.CancelledError:
            if self._abort is None or self._owner_cancelling():
                raise
            self._check()

    async def read(self) -> Any:
        self._check()
        try:
            resp = await self.call.read()
        except asyncio.CancelledError:
            if self._abort is None or self._owner_cancelling():
                raise
            self._check()
            raise
        except grpc.aio.AioRpcError as e:
            self._pool.stream_failed(self.endpoint, e)
            raise
        return resp

    async def __aiter__(self) -> AsyncIterator[Any]:
        while True:
            resp = await self.read()
            if resp is grpc.aio.EOF:
                return
            yield resp

    def cancel(self) -> bool:
        self.endpoint.streams.discard(self)
        return bool(self.call.cancel())

    def done(self) -> bool:
        return bool(self.call.done())

    def suspect(self) -> None:
        """The owner saw this stream go silent: probe its endpoint now."""
        self._pool.suspect(self.endpoint)


class EndpointPool:
    """Channels to every endpoint, the prober, and call routing. Async shell
    around :class:`EndpointHealth`."""

    def __init__(self, endpoints: list[Endpoint], *, config: HealthConfig | None = None,
                 rng: random.Random | None = None, clock: Clock = monotonic,
                 label: str = "", shuffle: bool = True) -> None:
        self.endpoints = {ep.name: ep for ep in endpoints}
        self.health = EndpointHealth([ep.name for ep in endpoints], rng=rng, config=config,
                                     shuffle=shuffle)
        self.config = self.health.config
        self.clock = clock
        self.label = label
        self._wake = asyncio.Event()
        self._good_once = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._probes: set[asyncio.Task[None]] = set()

    @property
    def current(self) -> Endpoint:
        return self.endpoints[self.health.current]

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._prober(), name=f"etcd-prober-{self.label}")

    async def wait_good(self, within: float) -> bool:
        """Wait until some endpoint has answered a probe well."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._good_once.wait()
                return True
        return False

    async def close(self) -> None:
        await cancel_and_wait((self._task, *self._probes), within=self.config.stop_timeout,
                              what=f"etcd pool {self.label} close")
        self._task = None
        for ep in self.endpoints.values():
            await ep.channel.close()

    def update(self, endpoints: list[Endpoint]) -> None:
        """Replace the endpoint set (a hostname re-resolved). Endpoints kept
        keep their channels (the ``endpoints`` given for them are closed);
        removed ones end everything in flight and close."""
        was = self.health.current
        fresh = {ep.name: ep for ep in endpoints}
        added, removed = self.health.update(list(fresh), self.clock())
        for name, ep in fresh.items():
            if name in added:
                self.endpoints[name] = ep
            elif name in self.endpoints and ep is not self.endpoints[name]:
                self._background(ep.channel.close())
        for name in removed:
            old = self.endpoints.pop(name)
            for s in list(old.streams):
                s.abort("endpoint no longer resolves")
            for call in list(old.calls):
                old.aborted.add(id(call))
                call.cancel()
            self._background(old.channel.close(grace=1.0))
        if added or removed:
            log.info("etcd %s client: endpoints now %s (added %s, removed %s)", self.label,
                     ",".join(self.health.order), added, removed)
            if self.health.current != was:
                log.warning("etcd %s client: moving from %s to %s (no longer resolves)",
                            self.label, was, self.health.current)
            self._wake.set()

    def _background(self, coro: Any) -> None:
        t = asyncio.create_task(coro)
        self._probes.add(t)
        t.add_done_callback(self._probes.discard)

    # -- health events ---------------------------------------------------------

    def mark_bad(self, ep: Endpoint, reason: str) -> None:
        was = self.health.current
        self._after(was, self.health.mark_bad(ep.name, self.clock(), reason))

    def suspect(self, ep: Endpoint) -> None:
        self.health.suspect(ep.name, self.clock())
        self._wake.set()

    def stream_failed(self, ep: Endpoint, err: grpc.aio.AioRpcError) -> None:
        if err.code() in _ENDPOINT_FAILURES:
            self.mark_bad(ep, f"stream: {err.code().name}: {err.details()}")

    def _after(self, was: str, moved: str | None) -> None:
        """Act on a change of the endpoint in use: everything in flight on
        the old one, if it is bad, ends now (streams re-open on the new one,
        idempotent calls retry there); if the move is back to a recovered
        preferred member, only the streams follow."""
        if moved is None:
            return
        old = self.endpoints[was]
        reason = self.health.reason(was)
        log.warning("etcd %s client: moving from %s to %s (%s)", self.label, was, moved,
                    reason or "preferred member recovered")
        for s in list(old.streams):
            s.abort(f"marked unhealthy ({reason})" if reason else "client moved")
        if not self.health.good(was):
            for call in list(old.calls):
                old.aborted.add(id(call))
                call.cancel()
        self._wake.set()

    # -- calls ---------------------------------------------------------------------

    async def unary(self, kind: str, method: str, request: Any, *, timeout: float,  # noqa: ASYNC109
                    idempotent: bool, what: str = "", leave_on_timeout: bool = False) -> Any:
        """One unary etcd call within ``timeout`` seconds, clipped to the
        caller's deadline (:mod:`drover.coord.deadline`). Idempotent calls
        retry on another endpoint; a write that may have been applied raises
        :class:`EtcdOutcomeUnknown`. With ``leave_on_timeout``, a member that
        does not answer within ``timeout`` itself (not the caller's shorter
        deadline: that is the caller's budget, no fault of the member's) is
        marked bad, so the next call goes to another member."""
        own = bounded(timeout) >= timeout  # the bound is ours, not the caller's
        deadline = self.clock() + bounded(timeout)
        what = what or f"{kind}.{method}"
        last = ""
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise EtcdUnavailable(f"etcd {what}: deadline exceeded ({last or 'no answer'})")
            ep = self.current
            call = getattr(ep.stub(kind), method)(request, timeout=remaining)
            ep.calls.add(call)
            slow = asyncio.get_running_loop().call_later(
                self.config.request_bound, self.suspect, ep)
            try:
                return await call
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if id(call) not in ep.aborted or (task is not None and task.cancelling()):
                    raise
                last = f"{ep.name} {self.health.reason(ep.name)}"
                if not idempotent:
                    raise EtcdOutcomeUnknown(
                        f"etcd {what}: member {ep.name} stopped answering after the request "
                        "was sent; it may or may not have been applied") from None
            except grpc.aio.AioRpcError as e:
                code = e.code()
                if code not in _ENDPOINT_FAILURES:
                    raise
                last = f"{ep.name}: {code.name}: {e.details()}"
                timed_out = self.clock() >= deadline
                if not timed_out:
                    self.mark_bad(ep, f"{what}: {code.name}")
                elif leave_on_timeout and own:
                    self.mark_bad(ep, f"{what}: no answer within {timeout:g}s")
                if not idempotent and not _never_sent(e):
                    raise EtcdOutcomeUnknown(
                        f"etcd {what}: {code.name} from {ep.name}; the write may or may not "
                        "have been applied") from e
                if timed_out:
                    raise EtcdUnavailable(f"etcd {what}: deadline exceeded ({last})") from e
                if self.current is ep:  # nowhere else to go: brief backoff
                    await asyncio.sleep(min(0.05, max(0.0, deadline - self.clock())))
            finally:
                slow.cancel()
                ep.calls.discard(call)
                ep.aborted.discard(id(call))

    def open_stream(self, kind: str, method: str, request_iterator: Any = None, *,
                    require_leader: bool = True) -> Stream:
        """A stream on the current endpoint (require-leader by default)."""
        ep = self.current
        fn = getattr(ep.stub(kind), method)
        md = REQUIRE_LEADER if require_leader else None
        call = fn(metadata=md) if request_iterator is None else fn(request_iterator, metadata=md)
        stream = Stream(self, ep, call)
        ep.streams.add(stream)
        call.add_done_callback(lambda _c: ep.streams.discard(stream))
        return stream

    # -- prober --------------------------------------------------------------------

    async def _probe(self, ep: Endpoint) -> None:
        try:
            resp = await ep.stub("maintenance").Status(
                rpc.StatusRequest(), timeout=self.config.probe_timeout)
            failure = "" if resp.leader else "probe: member has no leader"
        except grpc.aio.AioRpcError as e:
            failure = f"probe: {e.code().name}"
        except Exception as e:  # never leave the endpoint marked "probing"
            failure = f"probe: {e!r}"
        was = self.health.current
        if failure:
            self._after(was, self.health.probe_failed(ep.name, self.clock(), failure))
            return
        moved = self.health.probe_ok(ep.name, self.clock())
        if self.health.good(ep.name) or self.health.recovering(ep.name):
            self._good_once.set()
        self._after(was, moved)

    async def _prober(self) -> None:
        while True:
            now = self.clock()
            for name in self.health.due(now):
                self.health.probe_started(name, now)
                t = asyncio.create_task(self._probe(self.endpoints[name]))
                self._probes.add(t)
                t.add_done_callback(self._probe_done)
            self._wake.clear()
            delay = max(0.01, self.health.next_due() - self.clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(delay, 1.0)):
                    await self._wake.wait()

    def _probe_done(self, t: asyncio.Task[None]) -> None:
        self._probes.discard(t)
        self._wake.set()
        if not t.cancelled() and t.exception() is not None:
            log.warning("etcd probe failed unexpectedly: %r", t.exception())

"""ClientProxyService: report and steer the server lists; the convergence barrier.

* ``ListServers(service)``: each list in order (first in use), with health,
  rpc version, leader and backup flags, the last failure and the next
  rebalance as wall-clock timestamps, plus the membership revision the
  lists reflect. An unknown service is NOT_FOUND (``UNKNOWN_SERVICE``).
* ``RebalanceServers(service)``: rebalance now (one service or all) and
  return the resulting lists.
* ``WaitForConvergence(revision, timeout)``: see :mod:`drover.proxy.barrier`.
  ``revision`` must be positive and ``timeout`` not negative
  (INVALID_ARGUMENT); the wait also ends a little before the caller's own
  deadline so that the caller gets the list of replicas behind, not a
  DEADLINE_EXCEEDED.

Every other service's methods are forwarded: :func:`forwarding_handler` is
their servicer (one handler per call shape, each handing the call to
:class:`~drover.proxy.forward.Forwarder` through :class:`ForwardedCall`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf import duration_pb2, timestamp_pb2

from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.coord import Member
from drover.errors import Unavailable
from drover.proxy.barrier import Barrier
from drover.proxy.core.convergence import Convergence, ReplicaRevision
from drover.proxy.core.server_lists import ServerLists
from drover.proxy.core.snapshot import ListsSnapshot
from drover.proxy.forward import ForwardedMethod, Forwarder
from drover.proxy.rebalancer import Rebalancer
from drover.rpc.errors import relay

#: Answer this long before the caller's deadline.
DEADLINE_MARGIN = 0.05


def _timestamp(wall: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(wall * 1e9))
    return ts


def lists_to_proto(snap: ListsSnapshot, wall_now: float) -> list[proxy_pb2.ServerList]:
    def wall(t: float) -> timestamp_pb2.Timestamp:
        return _timestamp(wall_now + (t - snap.taken_at))

    out = []
    for lst in snap.lists:
        pb = proxy_pb2.ServerList(service=lst.service)
        if lst.next_rebalance is not None:
            pb.next_rebalance.CopyFrom(wall(lst.next_rebalance))
        for status in lst.servers:
            server = pb.servers.add(
                address=status.server.address,
                replica=status.server.replica,
                rpc_version=status.server.rpc_version,
                healthy=status.healthy,
                leader=status.leader,
                backup=status.server.backup,
            )
            if status.last_failure is not None:
                server.last_failure.CopyFrom(wall(status.last_failure))
        out.append(pb)
    return out


def _replica(r: ReplicaRevision) -> proxy_pb2.ReplicaRevision:
    return proxy_pb2.ReplicaRevision(
        replica=r.replica, address=r.address, applied_revision=r.applied_revision
    )


def convergence_to_proto(result: Convergence) -> proxy_pb2.WaitForConvergenceResponse:
    return proxy_pb2.WaitForConvergenceResponse(
        converged=result.converged,
        replicas=[_replica(r) for r in result.replicas],
        behind=[_replica(r) for r in result.behind],
    )


def duration_seconds(d: duration_pb2.Duration) -> float:
    return d.seconds + d.nanos / 1e9


class ClientProxyServicer(proxy_pb2_grpc.ClientProxyServiceServicer):
    def __init__(
        self,
        lists: ServerLists,
        rebalancer: Rebalancer,
        barrier: Barrier | None = None,
        *,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._lists = lists
        self._rebalancer = rebalancer
        #: Set by the app once etcd is reachable (discovery feeds it).
        self.barrier = barrier
        #: The live proxy replicas from membership (set by the app with discovery).
        self.proxies: Callable[[], Sequence[Member]] = tuple
        self._wall = wall_clock

    async def ListServers(
        self, request: proxy_pb2.ListServersRequest, context: Any
    ) -> proxy_pb2.ListServersResponse:
        snap = self._lists.snapshot(request.service)
        proxies = [
            proxy_pb2.Server(address=m.address, replica=m.replica, rpc_version=m.rpc_version,
                             healthy=True)
            for m in sorted(self.proxies(), key=lambda m: m.replica)
        ]
        return proxy_pb2.ListServersResponse(
            lists=lists_to_proto(snap, self._wall()), revision=snap.revision, proxies=proxies,
        )

    async def RebalanceServers(
        self, request: proxy_pb2.RebalanceServersRequest, context: Any
    ) -> proxy_pb2.RebalanceServersResponse:
        services = [self._lists.get(request.service).service] if request.service else [
            *self._lists.services
        ]
        for service in services:
            await self._rebalancer.rebalance(service)
        snap = self._lists.snapshot(request.service)
        return proxy_pb2.RebalanceServersResponse(lists=lists_to_proto(snap, self._wall()))

    async def WaitForConvergence(
        self, request: proxy_pb2.WaitForConvergenceRequest, context: Any
    ) -> proxy_pb2.WaitForConvergenceResponse:
        timeout = duration_seconds(request.timeout)
        remaining = context.time_remaining()
        if remaining is not None and timeout >= 0:
            timeout = min(timeout, max(0.0, remaining - DEADLINE_MARGIN))
        if self.barrier is None:
            raise Unavailable("the proxy has not started discovery yet")
        result = await self.barrier.wait(request.revision, timeout)
        return convergence_to_proto(result)


class ForwardedCall:
    """The gRPC context of a forwarded call, as the forwarder's ``Caller``."""

    __slots__ = ("_context",)

    def __init__(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        self._context = context

    def time_remaining(self) -> float | None:
        return self._context.time_remaining()

    def invocation_metadata(self) -> Any:
        return self._context.invocation_metadata()

    async def send_initial_metadata(self, metadata: Any) -> None:
        await self._context.send_initial_metadata(metadata)

    def set_trailing_metadata(self, metadata: Any) -> None:
        self._context.set_trailing_metadata(metadata)

    async def relay(self, error: grpc.aio.AioRpcError) -> None:
        await relay(self._context, error)


def forwarding_handler(forwarder: Forwarder, service: str = "") -> grpc.GenericRpcHandler:
    """The handler for the forwarded methods of ``service`` (full name; empty: all)."""
    handlers = {path: _method_handler(forwarder, m) for path, m in forwarder.methods.items()
                if not service or path.startswith(f"/{service}/")}

    class _Handler(grpc.GenericRpcHandler):
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
            return handlers.get(details.method)  # type: ignore[attr-defined]

    return _Handler()


def _method_handler(f: Forwarder, m: ForwardedMethod) -> grpc.RpcMethodHandler:
    if not m.client_streaming and not m.server_streaming:

        async def uu(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return await f.unary_unary(m, request, ForwardedCall(context))

        return grpc.unary_unary_rpc_method_handler(uu)
    if not m.client_streaming:

        def us(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            return f.unary_stream(m, request, ForwardedCall(context))

        return grpc.unary_stream_rpc_method_handler(us)
    if not m.server_streaming:

        async def su(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return await f.stream_unary(m, requests, ForwardedCall(context))

        return grpc.stream_unary_rpc_method_handler(su)

    def ss(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        return f.stream_stream(m, requests, ForwardedCall(context))

    return grpc.stream_stream_rpc_method_handler(ss)

"""Wiring of the client proxy for `drover serve proxy`.

The proxy serves ClientProxyService plus every backend service (state, eval
broker, deployment watcher) under its real name, forwarded by generic
handlers, so a client points its stubs at the proxy and nothing else;
reflection on the proxy lists the forwarded services too.

Configuration beyond :class:`~drover.config.ServeSettings`:

* ``--backup-servers`` / ``DROVER_BACKUP_SERVERS``: entries are
  ``service=host:port`` (``state=10.0.0.5:4650,broker=10.0.0.6:4651``),
  static fallbacks per backend service (:func:`parse_backup_servers`);
* ``--hold-timeout`` / ``DROVER_HOLD_TIMEOUT`` (seconds, default 3): how
  long a forwarded attempt waits on a server that shows no life
  (:mod:`drover.rpc.hold`);
* the server TLS files (``--tls-*``) double as client TLS towards backends
  (the CA verifies them, the certificate identifies the proxy for mTLS).

Readiness: every service turns SERVING once discovery has applied
membership once (lists may still be empty: calls then wait for a server
within their deadline and fail UNAVAILABLE ``NO_SERVER``).

Needs etcd: run it with membership on (``DroverServer(membership=True)``,
as ``drover serve`` does), which also publishes the applied revision for
the convergence barrier.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drover.api.proxy.v1 import proxy_pb2_grpc
from drover.config import ServeSettings
from drover.coord import EtcdKV, Keyspace, connect
from drover.proxy import metrics
from drover.proxy.barrier import Barrier
from drover.proxy.channel_pool import ChannelPool
from drover.proxy.config import ProxyConfig, parse_backup_servers
from drover.proxy.core.server_lists import ServerLists
from drover.proxy.discovery import Discovery
from drover.proxy.forward import BACKEND_MODULES, Forwarder
from drover.proxy.rebalancer import Rebalancer
from drover.proxy.servicer import ClientProxyServicer, forwarding_handler
from drover.rpc.hold import Holds
from drover.rpc.server import App, AppContext, ServiceBinding
from drover.tasks import cancel_and_wait

SERVICE = "drover.proxy.v1.ClientProxyService"


def _add_generic(handler: grpc.GenericRpcHandler, server: grpc.aio.Server) -> None:
    server.add_generic_rpc_handlers((handler,))


class ProxyApp:
    """The client proxy: discovery, forwarding, rebalancing, the barrier."""

    def __init__(
        self,
        settings: ServeSettings,
        config: ProxyConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.config = config or ProxyConfig(
            rpc_version=settings.rpc_version, hold_timeout=settings.hold_timeout
        )
        backups = parse_backup_servers(settings.backup_servers, self.config.services)
        self.lists = ServerLists(self.config, clock, rng or random.Random(), backups=backups)
        self.pool = ChannelPool(tls=settings.tls if settings.tls.enabled else None)
        self.holds = Holds(self._probe, self.config.hold_timeout, clock=clock)
        self.forwarder = Forwarder(self.lists, self.pool, holds=self.holds, clock=clock)
        self.discovery: Discovery | None = None
        self.rebalancer = Rebalancer(
            self.lists,
            self.pool,
            health_names={
                # The backend's own service answers for it (not the ACL service
                # a state replica also hosts).
                backend: [s.full_name for s in group[0].DESCRIPTOR.services_by_name.values()]
                for backend, group in BACKEND_MODULES.items()
            },
            clients=self._proxy_count,
            ping_timeout=self.config.ping_timeout,
        )
        self.servicer = ClientProxyServicer(self.lists, self.rebalancer)
        self._clock = clock
        self._tasks: list[asyncio.Task[Any]] = []
        self._clients: list[Any] = []
        bindings = [
            ServiceBinding(
                SERVICE, self.servicer, proxy_pb2_grpc.add_ClientProxyServiceServicer_to_server
            )
        ]
        for group in BACKEND_MODULES.values():
            for svc in (s for m in group for s in m.DESCRIPTOR.services_by_name.values()):
                handler = forwarding_handler(self.forwarder, svc.full_name)
                # Forwarded bytes: the backend checks the caller's forwarded token.
                bindings.append(ServiceBinding(svc.full_name, handler, _add_generic,
                                               enforce_acl=False))
        self.bindings = bindings

    async def _probe(self, address: str, within: float) -> bool:
        """Does ``address`` answer anything within ``within`` seconds? (the hold's ping)"""
        stub = health_pb2_grpc.HealthStub(self.pool.get(address))
        try:
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=within)
        except grpc.aio.AioRpcError as err:
            # A status the server sent is an answer; a timeout or a broken
            # transport is not.
            return err.code() not in (
                grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE
            )
        return True

    def _proxy_count(self) -> int:
        return max(1, len(self.discovery.proxies)) if self.discovery else 1

    async def prepare(self) -> None:
        """Nothing to prepare: bindings exist from construction; etcd comes in start."""

    async def start(self, ctx: AppContext) -> None:
        settings = self.settings
        self._unregister = metrics.register(self.lists, self.forwarder)
        control = ctx.etcd
        if control is None:
            client = await connect(settings.etcd, purpose="control")
            self._clients.append(client)
            control = EtcdKV(client)
        self._clients.append(bulk_client := await connect(settings.etcd, purpose="bulk"))
        bulk = EtcdKV(bulk_client)
        registration = ctx.registration
        if registration is not None:
            # Written only when the lists change: a short interval keeps the
            # barrier's latency low without a stream of writes.
            registration.flush_interval = self.config.applied_flush_interval
        discovery = self.discovery = Discovery(
            self.lists,
            self.pool,
            bulk=bulk,
            control=control,
            keyspace=Keyspace(settings.etcd.prefix),
            own_service=settings.service,
            sink=registration,
            on_gone=lambda address: self.holds.end(address, "it left membership"),
        )
        self.servicer.proxies = lambda: discovery.proxies
        self.servicer.barrier = Barrier(
            discovery,
            replica=settings.replica,
            applied=lambda: self.lists.applied_revision,
            clock=self._clock,
        )

        async def ready() -> None:
            await discovery.first_applied.wait()
            self.rebalancer.schedule_all()
            await ctx.health.set_all_ready(True)

        self._tasks = [
            asyncio.create_task(discovery.run_membership(), name="proxy-membership"),
            asyncio.create_task(ready(), name="proxy-ready"),
            asyncio.create_task(self.rebalancer.run(), name="proxy-rebalance"),
            *(
                asyncio.create_task(discovery.run_leader(s), name=f"proxy-leader-{s}")
                for s in self.config.services
                if s in self.config.leader_only_services
            ),
        ]

    async def stop(self) -> None:
        for close in getattr(self, "_unregister", []):
            close()
        await cancel_and_wait(self._tasks, within=self.settings.stop_timeout, what="proxy stop")
        self._tasks = []
        await self.holds.close()
        await self.pool.close()
        for client in self._clients:
            with contextlib.suppress(Exception):
                await client.close()
        self._clients = []


def create_app(settings: ServeSettings) -> App:
    return ProxyApp(settings)

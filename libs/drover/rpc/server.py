"""One way to build a drover server.

Every service is an :class:`App`: a set of gRPC service bindings plus
``start``/``stop`` hooks. :class:`DroverServer` wraps it in a grpc.aio server
with the health service (NOT_SERVING until the app says it is ready), server
reflection (v1 and v1alpha) for every drover service, the observe and error
interceptors, optional TLS, an optional plaintext health-only port (so
Kubernetes gRPC probes work when TLS is on), liveness and readiness
(:mod:`drover.rpc.health`: readiness checks re-run every
``readiness_interval``; with membership on, "etcd reachable" is one of
them), and graceful shutdown:

1. health NOT_SERVING everywhere (probes and balancers stop sending),
2. ``app.stop()`` (leaders resign, long polls end with a leader hint,
   streams end with UNAVAILABLE so their clients resume elsewhere),
3. membership left, the control etcd client closed,
4. ``server.stop(grace)``: no new calls; in-flight calls get ``grace``
   seconds, then are cancelled,
5. ``app.close()``, if the app has one: what its calls used (the state
   service's cache and etcd clients) is released only now, after the
   server stopped, so no call in flight loses it.

SIGTERM and SIGINT trigger it when :func:`run_until_signal` drives the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2

from drover.config import ServeSettings
from drover.coord import EtcdKV, Keyspace, Member, Registration, connect
from drover.errors import DroverError
from drover.rpc.acl import AclInterceptor, AclRuntime
from drover.rpc.channels import MAX_MESSAGE_BYTES
from drover.rpc.errors import ErrorInterceptor
from drover.rpc.health import Health
from drover.rpc.interceptors import ObserveInterceptor
from drover.tasks import cancel_and_wait

log = logging.getLogger(__name__)

REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


SERVER_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.so_reuseport", 0),
)


@dataclass(frozen=True)
class ServiceBinding:
    """A servicer and the generated function that adds it to a server."""

    name: str
    servicer: Any
    add: Callable[[Any, grpc.aio.Server], None]
    #: False for services this server only forwards (the proxy): their
    #: backends enforce access control with the forwarded token.
    enforce_acl: bool = True


@dataclass
class AppContext:
    """What a running app gets from its server.

    With membership on, ``etcd`` is the typed etcd layer
    (:class:`~drover.coord.EtcdKV`) on the server's control client (sessions,
    elections, membership; never bulk watches; the server owns and closes
    the client) and ``registration`` keeps
    this replica's ``members/<service>/<replica>`` entry, whose applied
    revision the app advances.
    """

    settings: ServeSettings
    health: Health
    address: str
    port: int
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    etcd: EtcdKV | None = None
    registration: Registration | None = None
    #: With ``settings.acl``: this cluster's server identity secret, for
    #: calls to other drover services (never log it).
    server_token: str = ""


class App(Protocol):
    """A drover service: bindings plus lifecycle hooks.

    ``prepare`` runs before the gRPC server is built: it creates what the
    servicers need (etcd clients, a loaded cache) so that ``bindings`` can
    be read afterwards. ``start`` may spawn background tasks (append them to ``ctx.tasks``) and
    must mark readiness through ``ctx.health`` when the service can serve.
    ``stop`` is called after health turned NOT_SERVING and before the server
    stops; it must return within the shutdown grace. An app may also define
    ``close()``: called once the server has stopped (every call ended), to
    release what its calls used (etcd clients), bounded by ``stop_timeout``.

    With ACLs on, an app that calls other drover services may define
    ``set_server_token(secret)``: it is called before ``prepare`` with the
    server identity its channels must send (``channel(..., token=...)``).
    """

    @property
    def bindings(self) -> Sequence[ServiceBinding]: ...

    async def prepare(self) -> None: ...

    async def start(self, ctx: AppContext) -> None: ...

    async def stop(self) -> None: ...


def _reflection_v1_handler(servicer: Any) -> grpc.GenericRpcHandler:
    # v1 and v1alpha reflection are wire-identical; newer grpcurl/buf curl ask
    # for v1 first, so answer it with the same servicer.
    method = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    return grpc.method_handlers_generic_handler(REFLECTION_V1, {"ServerReflectionInfo": method})


def _server_credentials(settings: ServeSettings) -> grpc.ServerCredentials | None:
    tls = settings.tls
    if not tls.cert:
        return None
    key = Path(tls.key).read_bytes()
    cert = Path(tls.cert).read_bytes()
    ca = Path(tls.ca).read_bytes() if tls.ca else None
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=ca is not None
    )


class DroverServer:
    """A grpc.aio server hosting one :class:`App`."""

    def __init__(self, settings: ServeSettings, app: App, *, membership: bool = False,
                 readiness_interval: float = 2.0) -> None:
        self.settings = settings
        self.app = app
        self.membership = membership
        self.readiness_interval = readiness_interval
        self._readiness: asyncio.Task[None] | None = None
        self.health = Health([])
        self._server: grpc.aio.Server | None = None
        self._health_server: grpc.aio.Server | None = None
        self._stopped = asyncio.Event()
        self._stopping = False
        self.ctx: AppContext | None = None
        self.health_port: int | None = None
        self.acl: AclRuntime | None = None

    async def start(self) -> AppContext:
        settings = self.settings
        if settings.acl:
            self.acl = await AclRuntime.start(settings)
            hook = getattr(self.app, "set_server_token", None)
            if hook is not None:
                hook(self.acl.server_token)
        prepare = getattr(self.app, "prepare", None)
        if prepare is not None:
            await prepare()
        self.health = Health([b.name for b in self.app.bindings])
        interceptors: list[Any] = [ObserveInterceptor(settings.service)]
        if self.acl is not None:  # before validation: the unauthorized learn nothing
            interceptors.append(AclInterceptor(
                self.acl.cache, [b.name for b in self.app.bindings if b.enforce_acl]))
        interceptors.append(ErrorInterceptor())
        server = grpc.aio.server(interceptors=interceptors, options=SERVER_OPTIONS)
        for binding in self.app.bindings:
            binding.add(binding.servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health.servicer, server)
        names = [b.name for b in self.app.bindings]
        reflection_names = [*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                            reflection.SERVICE_NAME, REFLECTION_V1]
        refl = reflection.aio.ReflectionServicer(reflection_names)
        from grpc_reflection.v1alpha import reflection_pb2_grpc

        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(refl, server)
        server.add_generic_rpc_handlers((_reflection_v1_handler(refl),))
        creds = _server_credentials(settings)
        if creds is None:
            port = server.add_insecure_port(settings.listen)
        else:
            port = server.add_secure_port(settings.listen, creds)
        if port == 0:
            raise OSError(f"cannot listen on {settings.listen}")
        await self.health.init()
        await server.start()
        self._server = server
        if settings.health_listen:
            hs = grpc.aio.server(options=SERVER_OPTIONS)
            health_pb2_grpc.add_HealthServicer_to_server(self.health.servicer, hs)
            self.health_port = hs.add_insecure_port(settings.health_listen)
            await hs.start()
            self._health_server = hs
        address = settings.advertised(port)
        self.ctx = AppContext(settings=settings, health=self.health, address=address, port=port,
                              server_token=self.acl.server_token if self.acl else "")
        if self.membership:
            await self._register(self.ctx)
        log.info(
            "serving %s on %s", settings.service, address,
            extra={"fields": {"replica": settings.replica, "services": ",".join(names)}},
        )
        try:
            await self.app.start(self.ctx)
        except BaseException:
            await self.stop()
            raise
        self._readiness = asyncio.create_task(self._check_readiness(), name="readiness")
        return self.ctx

    async def _check_readiness(self) -> None:
        """Re-run the readiness checks forever (see :mod:`drover.rpc.health`)."""
        while True:
            failing: dict[str, str] = {}
            try:
                failing = await self.health.refresh()
            except Exception:  # pragma: no cover - refresh contains its checks
                log.exception("readiness refresh failed")
            # Not ready: look again soon, so readiness returns promptly.
            await asyncio.sleep(self.readiness_interval / 8 if failing
                                else self.readiness_interval)

    async def _register(self, ctx: AppContext) -> None:
        settings = self.settings
        try:
            ctx.etcd = EtcdKV(await connect(settings.etcd, purpose="control"))
        except DroverError:
            await self.stop(0)
            raise
        member = Member(
            service=settings.service,
            replica=settings.replica,
            address=ctx.address,
            rpc_version=settings.rpc_version,
            started_at=time.time(),
        )
        ctx.registration = Registration(
            ctx.etcd, Keyspace(settings.etcd.prefix), member, ttl=settings.etcd.session_ttl
        )
        ctx.registration.start()
        registration = ctx.registration

        async def etcd_reachable() -> str | None:
            # Right after start the first registration may still be on its way.
            await registration.registered.wait()
            if registration.alive():
                return None
            return "no live etcd lease (etcd unreachable, or the membership entry is gone)"

        self.health.add_check("etcd", etcd_reachable)

    @property
    def port(self) -> int:
        assert self.ctx is not None, "server not started"
        return self.ctx.port

    async def stop(self, grace: float | None = None) -> None:
        """Graceful shutdown; safe to call more than once."""
        if self._stopping:
            await self._stopped.wait()
            return
        self._stopping = True
        grace = self.settings.shutdown_grace if grace is None else grace
        try:
            if self._readiness is not None:
                await cancel_and_wait([self._readiness], within=self.settings.stop_timeout,
                                      what=f"{self.settings.service} stop")
            await self.health.shutdown()
            try:
                async with asyncio.timeout(max(grace, 0.1)):
                    await self.app.stop()
            except TimeoutError:
                log.warning("app stop exceeded %.1fs grace; stopping the server anyway", grace)
            except Exception:
                log.exception("app stop failed")
            if self.ctx is not None:
                await cancel_and_wait(self.ctx.tasks, within=self.settings.stop_timeout,
                                      what=f"{self.settings.service} stop")
                if self.ctx.registration is not None:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(2.0):
                            await self.ctx.registration.close()
                client = self.ctx.etcd.client if self.ctx.etcd is not None else None
                if self.ctx.etcd is not None:
                    with contextlib.suppress(Exception):
                        await self.ctx.etcd.close()
                if client is not None:
                    with contextlib.suppress(Exception):
                        await client.close()
            if self._server is not None:
                await self._server.stop(grace)
            await self._close_app()
            if self._health_server is not None:
                await self._health_server.stop(0)
            if self.acl is not None:
                with contextlib.suppress(Exception):
                    await self.acl.close()
        finally:
            self._stopped.set()

    async def _close_app(self) -> None:
        """The app's ``close`` hook (App doc), bounded and never raising."""
        close = getattr(self.app, "close", None)
        if close is None:
            return
        try:
            async with asyncio.timeout(self.settings.stop_timeout):
                await close()
        except TimeoutError:
            log.warning("app close exceeded %.1fs", self.settings.stop_timeout)
        except Exception:
            log.exception("app close failed")

    async def wait_stopped(self) -> None:
        await self._stopped.wait()


async def run_until_signal(server: DroverServer) -> None:
    """Start ``server``, then stop it gracefully on SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    waiter = asyncio.create_task(stop.wait())
    done = asyncio.create_task(server.wait_stopped())
    await asyncio.wait({waiter, done}, return_when=asyncio.FIRST_COMPLETED)
    log.info("shutting down %s", server.settings.service)
    await server.stop()
    waiter.cancel()

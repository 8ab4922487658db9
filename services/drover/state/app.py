"""Wiring of the state service for `drover serve state`.

``prepare`` connects to etcd and loads the cache before the gRPC server is
built, so a replica reports SERVING only once it can answer consistently;
afterwards readiness follows a periodic consistent read (the "cache" check:
etcd reachable and the cache caught up).
"""

from __future__ import annotations

from collections.abc import Callable

from drover.api.acl.v1 import acl_pb2_grpc
from drover.config import ServeSettings
from drover.errors import DroverError
from drover.rpc.server import App, AppContext, ServiceBinding
from drover.state import metrics
from drover.state.main import StateService, build_state_service
from drover.state.servicer import add_state_servicer

SERVICE = "drover.state.v1.StateService"
ACL_SERVICE = "drover.acl.v1.AclService"


class StateApp:
    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self._service: StateService | None = None
        self._unregister: list[Callable[[], None]] = []

    async def prepare(self) -> None:
        self._service = await build_state_service(self.settings)

    @property
    def bindings(self) -> list[ServiceBinding]:
        assert self._service is not None, "prepare() first"
        assert self._service.acl_admin is not None
        return [
            ServiceBinding(
                SERVICE,
                self._service.servicer,
                add_state_servicer,
            ),
            ServiceBinding(ACL_SERVICE, self._service.acl_admin,
                           acl_pb2_grpc.add_AclServiceServicer_to_server),
        ]

    async def start(self, ctx: AppContext) -> None:
        assert self._service is not None
        self._unregister = metrics.register(self._service.cache)
        await self._service.ready.wait()
        ctx.health.add_check("cache", self._cache_caught_up)
        await ctx.health.set_ready(SERVICE)
        await ctx.health.set_ready(ACL_SERVICE)

    async def _cache_caught_up(self) -> str | None:
        """Ready only while a consistent read would succeed: the cache reaches
        etcd's last object write (one marker read, then the cache's own wait)."""
        assert self._service is not None
        try:
            await self._service.cache.sync()
        except DroverError as e:
            return f"the cache is not caught up with etcd: {e}"
        return None

    async def stop(self) -> None:
        for close in self._unregister:
            close()
        if self._service is not None:
            await self._service.close()


def create_app(settings: ServeSettings) -> App:
    return StateApp(settings)

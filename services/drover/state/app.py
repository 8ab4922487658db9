"""Wiring of the state service for `drover serve state`.

``prepare`` connects to etcd and loads the cache before the gRPC server is
built, so a replica reports SERVING only once it can answer consistently.
"""

from __future__ import annotations

from collections.abc import Callable

from drover.api.state.v1 import state_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.server import App, AppContext, ServiceBinding
from drover.state import metrics
from drover.state.main import StateService, build_state_service

SERVICE = "drover.state.v1.StateService"


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
        return [
            ServiceBinding(
                SERVICE,
                self._service.servicer,
                state_pb2_grpc.add_StateServiceServicer_to_server,
            )
        ]

    async def start(self, ctx: AppContext) -> None:
        assert self._service is not None
        self._unregister = metrics.register(self._service.cache)
        await self._service.ready.wait()
        await ctx.health.set_ready(SERVICE)

    async def stop(self) -> None:
        for close in self._unregister:
            close()
        if self._service is not None:
            await self._service.close()


def create_app(settings: ServeSettings) -> App:
    return StateApp(settings)

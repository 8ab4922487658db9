"""Wiring of the state service for `drover serve state`.

``prepare`` connects to etcd and loads the cache before the gRPC server is
built, so a replica reports SERVING only once it can answer consistently.
"""

from __future__ import annotations

from drover.api.acl.v1 import acl_pb2_grpc
from drover.api.state.v1 import state_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.server import App, AppContext, ServiceBinding
from drover.state.main import StateService, build_state_service

SERVICE = "drover.state.v1.StateService"
ACL_SERVICE = "drover.acl.v1.AclService"


class StateApp:
    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self._service: StateService | None = None

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
                state_pb2_grpc.add_StateServiceServicer_to_server,
            ),
            ServiceBinding(ACL_SERVICE, self._service.acl_admin,
                           acl_pb2_grpc.add_AclServiceServicer_to_server),
        ]

    async def start(self, ctx: AppContext) -> None:
        assert self._service is not None
        await self._service.ready.wait()
        await ctx.health.set_ready(SERVICE)
        await ctx.health.set_ready(ACL_SERVICE)

    async def stop(self) -> None:
        if self._service is not None:
            await self._service.close()


def create_app(settings: ServeSettings) -> App:
    return StateApp(settings)

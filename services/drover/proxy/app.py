"""Wiring of the client proxy for `drover serve proxy`."""

from __future__ import annotations

from drover.api.proxy.v1 import proxy_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.app import StaticApp
from drover.rpc.server import App, ServiceBinding

SERVICE = "drover.proxy.v1.ClientProxyService"


def create_app(settings: ServeSettings) -> App:
    return StaticApp(
        [
            ServiceBinding(
                SERVICE,
                proxy_pb2_grpc.ClientProxyServiceServicer(),
                proxy_pb2_grpc.add_ClientProxyServiceServicer_to_server,
            )
        ]
    )

"""Wiring of the state service for `drover serve state`."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.app import StaticApp
from drover.rpc.server import App, ServiceBinding

SERVICE = "drover.state.v1.StateService"


def create_app(settings: ServeSettings) -> App:
    return StaticApp(
        [
            ServiceBinding(
                SERVICE,
                state_pb2_grpc.StateServiceServicer(),
                state_pb2_grpc.add_StateServiceServicer_to_server,
            )
        ]
    )

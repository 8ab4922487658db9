"""Wiring of the eval broker for `drover serve broker`."""

from __future__ import annotations

from drover.api.broker.v1 import broker_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.app import StaticApp
from drover.rpc.server import App, ServiceBinding

SERVICE = "drover.broker.v1.EvalBrokerService"


def create_app(settings: ServeSettings) -> App:
    return StaticApp(
        [
            ServiceBinding(
                SERVICE,
                broker_pb2_grpc.EvalBrokerServiceServicer(),
                broker_pb2_grpc.add_EvalBrokerServiceServicer_to_server,
            )
        ]
    )

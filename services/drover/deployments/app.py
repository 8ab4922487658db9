"""Wiring of the deployment watcher for `drover serve deployments`."""

from __future__ import annotations

from drover.api.deployments.v1 import deployments_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.app import StaticApp
from drover.rpc.server import App, ServiceBinding

SERVICE = "drover.deployments.v1.DeploymentWatcherService"


def create_app(settings: ServeSettings) -> App:
    return StaticApp(
        [
            ServiceBinding(
                SERVICE,
                deployments_pb2_grpc.DeploymentWatcherServiceServicer(),
                deployments_pb2_grpc.add_DeploymentWatcherServiceServicer_to_server,
            )
        ]
    )

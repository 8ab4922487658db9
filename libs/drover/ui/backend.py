"""The UI's connection to drover: the CLI's channel, the caller's token.

One channel for the whole process (the CLI's: :func:`drover.rpc.failover.
client_channel` over ``--address``, reads retried through an election by
:class:`drover.cli.read_retry.ReadRetryChannel`). The token is the browser
user's, per request: :func:`as_user` sets it for the request's task and
the channel reads it on every call (``authorization: Bearer``), so one
user's token never serves another's request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from drover.api.acl.v1 import acl_pb2_grpc
from drover.api.broker.v1 import broker_pb2_grpc
from drover.api.deployments.v1 import deployments_pb2_grpc
from drover.api.state.v1 import state_pb2_grpc
from drover.cli.read_retry import ReadRetryChannel
from drover.rpc.failover import client_channel, split_addresses
from drover.ui.config import UiConfig

_token: ContextVar[str] = ContextVar("drover_ui_token", default="")


@contextmanager
def as_user(token: str) -> Iterator[None]:
    """Calls made inside carry ``token`` (empty: anonymous)."""
    reset = _token.set(token)
    try:
        yield
    finally:
        _token.reset(reset)


def current_token() -> str:
    return _token.get()


class Backend:
    """Stubs of every drover service the pages call, over one channel."""

    def __init__(self, cfg: UiConfig) -> None:
        self.timeout = cfg.timeout
        inner = client_channel(cfg.address, tls=cfg.tls, token=current_token)
        self.channel: Any = ReadRetryChannel(inner, split_addresses(cfg.address)
                                             or [cfg.address])
        self.state = state_pb2_grpc.StateServiceStub(self.channel)
        self.broker = broker_pb2_grpc.EvalBrokerServiceStub(self.channel)
        self.deployments = deployments_pb2_grpc.DeploymentWatcherServiceStub(self.channel)
        self.acl = acl_pb2_grpc.AclServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

"""A state service over the session etcd, served by a real grpc.aio server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from drover.api.state.v1 import state_pb2_grpc
from drover.coord.keys import Keyspace
from drover.rpc.errors import ErrorInterceptor
from drover.state.main import StateService, build_on_store
from drover.state.store import EtcdStore


@dataclass
class Replica:
    service: StateService
    server: grpc.aio.Server
    channel: grpc.aio.Channel
    stub: state_pb2_grpc.StateServiceStub
    store: EtcdStore
    etcd_channel: grpc.aio.Channel

    async def close(self) -> None:
        await self.channel.close()
        await self.server.stop(None)
        await self.service.close()
        await self.etcd_channel.close()


async def start_replica(endpoint: str, keyspace: Keyspace) -> Replica:
    etcd_channel = grpc.aio.insecure_channel(endpoint)
    store = EtcdStore(etcd_channel)
    service = await build_on_store(store, keyspace)
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    service.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    stub = state_pb2_grpc.StateServiceStub(channel)
    return Replica(service, server, channel, stub, store, etcd_channel)


@pytest.fixture
async def replica(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[Replica]:
    r = await start_replica(etcd_endpoint, keyspace)
    try:
        yield r
    finally:
        await r.close()


@pytest.fixture
async def replica2(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[Replica]:
    r = await start_replica(etcd_endpoint, keyspace)
    try:
        yield r
    finally:
        await r.close()

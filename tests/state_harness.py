"""The one state-service test harness: a state service built on any KV
(:class:`EtcdStore` on the session etcd, or :class:`MemoryKV`), served by a
real grpc.aio server on a free loopback port, with a stub to it.

Importable from any test module (pytest puts ``tests/`` on ``sys.path``):
``tests/integration/state``, ``tests/integration/deployments`` and the
unit tests on :class:`MemoryKV` all start their state service here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2_grpc
from drover.coord import Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import KVStore, LeaseKV, Put
from drover.rpc.errors import ErrorInterceptor
from drover.state.app import EtcdStore, StateService, build_on_store, default_state_config
from drover.state.config import StateConfig


def state_config_with(**parts: Any) -> StateConfig:
    """The default configs with some parts replaced (``writer=WriterConfig(...)``)."""
    return replace(default_state_config(), **parts)


@dataclass
class StateReplica:
    """One state service and a client of it. ``etcd_channel`` is None on
    :class:`MemoryKV`."""

    service: StateService
    server: grpc.aio.Server
    channel: grpc.aio.Channel
    stub: state_pb2_grpc.StateServiceStub
    store: KVStore
    address: str
    etcd_channel: grpc.aio.Channel | None = None
    _closed: bool = field(default=False, repr=False)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.channel.close()
        await self.server.stop(None)
        await self.service.close()
        if self.etcd_channel is not None:
            await self.etcd_channel.close()


async def start_state_on(store: LeaseKV, keyspace: Keyspace, *,
                         interceptors: tuple[Any, ...] = (),
                         etcd_channel: grpc.aio.Channel | None = None,
                         config: StateConfig | None = None, port: int = 0) -> StateReplica:
    """The state service on ``store``, listening on loopback ``port`` (0: a
    free one; a replica started again on its address passes its own)
    (``config``: see :func:`build_on_store`; :func:`state_config_with`)."""
    service = await build_on_store(store, keyspace, config)
    server = grpc.aio.server(interceptors=[*interceptors, ErrorInterceptor()])
    for binding in service.bindings:
        binding.add(binding.servicer, server)
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    address = f"127.0.0.1:{port}"
    channel = grpc.aio.insecure_channel(address)
    return StateReplica(service, server, channel, state_pb2_grpc.StateServiceStub(channel),
                        store, address, etcd_channel)


async def start_state(endpoint: str, keyspace: Keyspace,
                      interceptors: tuple[Any, ...] = (),
                      config: StateConfig | None = None, port: int = 0) -> StateReplica:
    """The state service on the etcd at ``endpoint`` (its own channel)."""
    etcd_channel = grpc.aio.insecure_channel(endpoint)
    return await start_state_on(EtcdStore(etcd_channel), keyspace, interceptors=interceptors,
                                etcd_channel=etcd_channel, config=config, port=port)


async def leader_fence(state: StateReplica, election: str) -> tuple[tuple[str, str]]:
    """A fence on a fresh key under ``election/<election>/``: what the state
    service requires of leader-only writes (broker outcomes, UpdateDeployment)."""
    key = f"{state.service.cache.keys.base}election/{election}/test-{id(state):x}"
    res = await state.store.txn([], [Put(key.encode(), b"test leader")])
    return Fence(key, res.revision).metadata()

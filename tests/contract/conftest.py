"""The ``backend`` fixture: each contract test runs once per KV (see
``kv_backends.py``).

The etcd side is an etcd of its own, not the session's: compaction is
etcd-wide, and the session's other tests read history from early revisions
(Subscribe from index 1)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from kv_backends import Backend
from virtual_clock import VirtualClock

from drover.coord.etcd_kv import EtcdKV
from drover.coord.memkv import MemoryKV
from drover.dev.etcd import EtcdServer


@pytest.fixture(scope="session")
def contract_etcd() -> Iterator[EtcdServer]:
    """A real etcd the contract may compact (started on first use)."""
    server = EtcdServer(name="drover-contract").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["memory", "etcd"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    prefix = f"/c{uuid.uuid4().hex[:12]}/".encode()
    if request.param == "memory":
        clock = VirtualClock()
        yield Backend("memory", MemoryKV(clock), prefix, clock)
        return
    server: EtcdServer = request.getfixturevalue("contract_etcd")
    channel = grpc.aio.insecure_channel(server.endpoint)
    try:
        yield Backend("etcd", EtcdKV(channel), prefix)
    finally:
        await channel.close()

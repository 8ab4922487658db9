"""The ``backend`` fixture: each contract test runs once per KV (see
``kv_backends.py``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import grpc
import pytest
from kv_backends import Backend
from virtual_clock import VirtualClock

from drover.coord.memkv import MemoryKV
from drover.state.store import EtcdStore


@pytest.fixture(params=["memory", "etcd"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    prefix = f"/c{uuid.uuid4().hex[:12]}/".encode()
    if request.param == "memory":
        clock = VirtualClock()
        yield Backend("memory", MemoryKV(clock), prefix, clock)
        return
    endpoint = request.getfixturevalue("etcd_endpoint")
    channel = grpc.aio.insecure_channel(endpoint)
    try:
        yield Backend("etcd", EtcdStore(channel), prefix)
    finally:
        await channel.close()

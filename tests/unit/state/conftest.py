"""The state service on :class:`MemoryKV` (no etcd) on the test's virtual
clock, two ways: ``replica``, served by a real grpc.aio server on loopback
(the RPC cases, in milliseconds), and ``service``, the service alone (no
gRPC server) for the tests of its shell modules."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from state_harness import StateReplica, start_state_on
from virtual_clock import VirtualClock

from drover.coord.keys import Keyspace
from drover.coord.memkv import MemoryKV
from drover.state.app import StateService, build_on_store


@pytest.fixture
async def replica(keyspace: Keyspace, clock: VirtualClock) -> AsyncIterator[StateReplica]:
    r = await start_state_on(MemoryKV(clock), keyspace)
    try:
        yield r
    finally:
        await r.close()


@pytest.fixture
async def service(keyspace: Keyspace, clock: VirtualClock) -> AsyncIterator[StateService]:
    svc = await build_on_store(MemoryKV(clock), keyspace)
    try:
        yield svc
    finally:
        await svc.close()

"""A state service on :class:`MemoryKV` (no etcd), served by a real
grpc.aio server on loopback: the pure logic above the store, in
milliseconds. The store's clock is the test's virtual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from state_harness import StateReplica, start_state_on
from virtual_clock import VirtualClock

from drover.coord.keys import Keyspace
from drover.coord.memkv import MemoryKV


@pytest.fixture
async def replica(keyspace: Keyspace, clock: VirtualClock) -> AsyncIterator[StateReplica]:
    r = await start_state_on(MemoryKV(clock), keyspace)
    try:
        yield r
    finally:
        await r.close()

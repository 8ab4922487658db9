"""A state service over the session etcd, served by a real grpc.aio server
(started by the one harness, ``tests/state_harness.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from state_harness import StateReplica, start_state

from drover.coord.keys import Keyspace

Replica = StateReplica
start_replica = start_state


@pytest.fixture
async def replica(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[StateReplica]:
    r = await start_state(etcd_endpoint, keyspace)
    try:
        yield r
    finally:
        await r.close()


@pytest.fixture
async def replica2(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[StateReplica]:
    r = await start_state(etcd_endpoint, keyspace)
    try:
        yield r
    finally:
        await r.close()

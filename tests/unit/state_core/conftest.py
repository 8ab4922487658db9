"""The one fixture the shell tests of the state core share: a state service
on :class:`MemoryKV` (no etcd, no gRPC server) on the virtual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from virtual_clock import VirtualClock

from drover.coord.keys import Keyspace
from drover.coord.memkv import MemoryKV
from drover.state.app import StateService, build_on_store


@pytest.fixture
async def service(keyspace: Keyspace, clock: VirtualClock) -> AsyncIterator[StateService]:
    svc = await build_on_store(MemoryKV(clock), keyspace)
    try:
        yield svc
    finally:
        await svc.close()

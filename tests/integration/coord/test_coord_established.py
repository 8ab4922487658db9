"""A leader is advertised as established only once its components have
established (the election key's value says so), and a new term starts
un-established again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from drover.config import EtcdSettings
from drover.coord import (
    EtcdClient,
    Keyspace,
    Leadership,
    LeadershipConfig,
    Term,
    connect,
    observe,
    observe_changes,
)
from drover.coord.etcd_kv import EtcdKV


@pytest.fixture
async def client(etcd_endpoint: str) -> AsyncIterator[EtcdClient]:
    c = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="control")
    yield c
    await c.close()


class Gate:
    """A component whose establish waits until the test opens the gate."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.established: Term | None = None

    async def establish(self, term: Term) -> None:
        await self.open.wait()
        self.established = term

    async def revoke(self) -> None:
        self.established = None


async def test_established_only_after_every_component(client: EtcdClient,
                                                      keyspace: Keyspace) -> None:
    gate = Gate()
    lead = Leadership(EtcdKV(client), keyspace, "est", "a:1", [gate],
                      config=LeadershipConfig(ttl=5, retry_backoff=0.05))
    seen: list[tuple[str, int, bool]] = []
    changed = asyncio.Event()

    async def watch() -> None:
        async for info in observe_changes(EtcdKV(client), keyspace, "est", recheck=0.5):
            if info is not None:
                seen.append((info.address, info.term, info.established))
                changed.set()

    async def until(cond: Callable[[], bool]) -> None:
        async with asyncio.timeout(10):
            while not cond():
                changed.clear()
                await changed.wait()

    watcher = asyncio.create_task(watch())
    lead.start()
    try:
        await until(lambda: bool(seen))
        info = await observe(EtcdKV(client), keyspace, "est")
        assert info is not None and info.address == "a:1" and not info.established
        await asyncio.sleep(0.3)  # still establishing: still not advertised
        assert not (await observe(EtcdKV(client), keyspace, "est")).established  # type: ignore[union-attr]
        gate.open.set()
        await until(lambda: seen[-1][2])
        assert seen[-1] == ("a:1", info.term, True)
        assert gate.established is not None and gate.established.revision == info.term
    finally:
        watcher.cancel()
        await lead.resign()

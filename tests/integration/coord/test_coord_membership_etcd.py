"""Membership against a real etcd: register, update, list, watch, expiry."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator

import pytest
from coord_procs import Candidate

from drover.config import EtcdSettings
from drover.coord import (
    EtcdClient,
    Keyspace,
    Member,
    MemberList,
    Registration,
    connect,
    list_members,
    watch_members,
)
from drover.coord.etcd_kv import EtcdKV


@pytest.fixture
async def client(etcd_endpoint: str) -> AsyncIterator[EtcdClient]:
    c = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="control")
    yield c
    await c.close()


async def test_register_update_list_and_watch(client: EtcdClient, keyspace: Keyspace) -> None:
    lists: list[MemberList] = []

    async def follow() -> None:
        async for ml in watch_members(EtcdKV(client), keyspace, "proxy"):
            lists.append(ml)

    watcher = asyncio.create_task(follow())
    for _ in range(250):  # the watch's initial list: from here on no change is missed
        if lists:
            break
        await asyncio.sleep(0.02)
    assert lists and lists[0].members == ()
    reg = Registration(EtcdKV(client), keyspace, Member("proxy", "r1", "127.0.0.1:1", 1,
                                                started_at=time.time()),
                       ttl=2, flush_interval=0.05)
    reg.start()
    try:
        await asyncio.wait_for(reg.registered.wait(), 3)
        for rev in range(1, 50):  # a burst: coalesced into few writes
            reg.set_applied_revision(rev)
        reg.set_applied_revision(10)  # never goes backwards
        for _ in range(100):
            got = await list_members(EtcdKV(client), keyspace, "proxy")
            if got.members and got.members[0].applied_revision == 49:
                break
            await asyncio.sleep(0.02)
        assert [m.replica for m in got.members] == ["r1"]
        assert got.members[0].applied_revision == 49 and got.revision > 0
        await reg.close()
        assert (await list_members(EtcdKV(client), keyspace, "proxy")).members == ()
        for _ in range(100):
            if lists and lists[-1].members == ():
                break
            await asyncio.sleep(0.02)
        assert any(ml.members and ml.members[0].replica == "r1" for ml in lists)
        assert lists[-1].members == ()
    finally:
        watcher.cancel()
        await reg.close()


async def test_each_revision_is_its_own_list_even_when_delivered_together(
        client: EtcdClient, keyspace: Keyspace) -> None:
    watch = watch_members(EtcdKV(client), keyspace, "state")
    first = await asyncio.wait_for(anext(watch), 5)
    assert first.members == ()
    revisions = []
    for name in ("a", "b", "c"):  # three txns while nobody reads the watch
        key = keyspace.member("state", name).encode()
        member = Member("state", name, f"127.0.0.1:{ord(name)}", 1, started_at=1.0)
        revisions.append((await client.put(key, member.to_json())).header.revision)
    await asyncio.sleep(0.3)  # let them arrive as one delivery
    try:
        seen = [await asyncio.wait_for(anext(watch), 5) for _ in range(3)]
    finally:
        await watch.aclose()
    assert [ml.revision for ml in seen] == revisions
    assert [[m.replica for m in ml.members] for ml in seen] == [["a"], ["a", "b"], ["a", "b", "c"]]


@pytest.mark.slow
async def test_entry_vanishes_when_the_replica_dies(client: EtcdClient, keyspace: Keyspace,
                                                    etcd_endpoint: str,
                                                    etcd_prefix: str) -> None:
    ttl = 2  # etcd's minimum lease TTL with default election timeout
    cand = Candidate(etcd_endpoint, etcd_prefix, "m1", ttl=ttl, extra=("--member",))
    try:
        cand.wait_for("ready", 10)
        got = await list_members(EtcdKV(client), keyspace, "demo")
        assert [m.replica for m in got.members] == ["m1"]
        cand.signal(signal.SIGKILL)
        t0 = time.monotonic()
        while (await list_members(EtcdKV(client), keyspace, "demo")).members:
            assert time.monotonic() - t0 < ttl + 1.0, "entry must expire with the lease"
            await asyncio.sleep(0.05)
    finally:
        cand.stop()

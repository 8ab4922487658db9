"""Sessions, election, observe, fencing against a real etcd (in-process)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from polling import eventually

from drover.config import EtcdSettings
from drover.coord import (
    Election,
    EtcdClient,
    FenceLost,
    Keyspace,
    Leadership,
    LeadershipConfig,
    NotCandidate,
    Session,
    SessionLost,
    Term,
    connect,
    observe,
    observe_changes,
)
from drover.coord.etcd_kv import EtcdKV
from drover.coord.kv import Put


@pytest.fixture
async def client(etcd_endpoint: str) -> AsyncIterator[EtcdClient]:
    c = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="control")
    yield c
    await c.close()


async def test_session_outlives_its_ttl_and_detects_revocation(client: EtcdClient) -> None:
    session = await Session.open(EtcdKV(client), 1)
    try:
        await asyncio.sleep(2.2)
        assert not session.lost.is_set() and not session.unsafe.is_set()
        assert (await client.get_lease_info(session.lease_id, keys=False)).TTL > 0
        await client.revoke_lease(session.lease_id)  # "the lease is gone"
        await asyncio.wait_for(session.lost.wait(), 1.5)
        with pytest.raises(SessionLost):
            session.check()
    finally:
        await session.close()


async def test_a_client_closed_under_a_session_ends_it_cleanly(etcd_endpoint: str) -> None:
    own = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="control")
    session = await Session.open(EtcdKV(own), 2)
    await own.close()
    await asyncio.wait_for(session.lost.wait(), 3.0)
    assert session.lost_reason == "the etcd client was closed"
    assert session._task is not None and session._task.exception() is None
    await session.close()  # no revoke possible: the lease just expires


async def test_close_revokes_the_lease(client: EtcdClient) -> None:
    session = await Session.open(EtcdKV(client), 5)
    await session.close()
    assert (await client.get_lease_info(session.lease_id, keys=False)).TTL == -1


async def test_graceful_failover_in_process(client: EtcdClient, keyspace: Keyspace) -> None:
    cfg = LeadershipConfig(ttl=2, retry_backoff=0.05)
    a = Leadership(EtcdKV(client), keyspace, "svc", "a:1", config=cfg)
    b = Leadership(EtcdKV(client), keyspace, "svc", "b:1", config=cfg)
    a.start()
    await eventually(lambda: a.is_leader)
    b.start()
    info = await observe(EtcdKV(client), keyspace, "svc")
    assert info is not None and info.address == "a:1"
    t0 = time.monotonic()
    await a.resign()
    await eventually(lambda: b.is_leader, within=1.0)
    assert time.monotonic() - t0 < 1.0
    info = await observe(EtcdKV(client), keyspace, "svc")
    assert info is not None and info.address == "b:1"
    await b.resign()
    assert await observe(EtcdKV(client), keyspace, "svc") is None


async def test_phantom_leadership_waiting_candidate_whose_lease_expires(
        client: EtcdClient, keyspace: Keyspace) -> None:
    sa, sb = await Session.open(EtcdKV(client), 5), await Session.open(EtcdKV(client), 1)
    a = Election(EtcdKV(client), keyspace, "ph", sa, address="a:1")
    b = Election(EtcdKV(client), keyspace, "ph", sb, address="b:1")
    term_a = await a.campaign()
    waiting = asyncio.ensure_future(b.campaign())
    await asyncio.sleep(0.2)
    assert not waiting.done()
    # b's lease expires while it waits (simulated by revoking it; its keepalive
    # sees TTL <= 0), then the leader goes: b must not "win".
    await client.revoke_lease(sb.lease_id)
    with pytest.raises((NotCandidate, SessionLost)):
        await asyncio.wait_for(waiting, 3)
    assert await a.resign(term_a)
    assert await observe(EtcdKV(client), keyspace, "ph") is None
    await sa.close()
    await sb.close()


async def test_key_vanishing_while_waiting_is_noticed(client: EtcdClient,
                                                      keyspace: Keyspace) -> None:
    sa, sb = await Session.open(EtcdKV(client), 5), await Session.open(EtcdKV(client), 5)
    a = Election(EtcdKV(client), keyspace, "ph2", sa, address="a:1")
    b = Election(EtcdKV(client), keyspace, "ph2", sb, address="b:1")
    await a.campaign()
    waiting = asyncio.ensure_future(b.campaign())
    await asyncio.sleep(0.2)
    await client.delete(b.key.encode())  # own key gone, session still fine
    with pytest.raises(NotCandidate) as e:
        await asyncio.wait_for(waiting, 2)
    assert e.value.reason == "NOT_CANDIDATE"
    await sa.close()
    await sb.close()


async def test_fenced_write_after_losing_the_key_ends_leadership(
        client: EtcdClient, keyspace: Keyspace) -> None:
    lead = Leadership(EtcdKV(client), keyspace, "fx", "a:1",
                      config=LeadershipConfig(ttl=2, retry_backoff=5))
    lead.start()
    await eventually(lambda: lead.is_leader)
    term = lead.term
    assert isinstance(term, Term)
    kv = EtcdKV(client)
    assert (await term.txn(kv, ops=[Put(b"/fx-probe", b"1")])).succeeded
    # Another process takes over: the key is recreated with a new revision.
    await client.delete(term.leader_key.encode())
    await client.put(term.leader_key.encode(), b"usurper")
    with pytest.raises(FenceLost):
        await term.txn(kv, ops=[Put(b"/fx-probe", b"2")])
    assert term.ended
    for _ in range(100):
        if lead.term is None:
            break
        await asyncio.sleep(0.01)
    assert lead.term is None
    assert (await client.get(b"/fx-probe")).value == b"1"
    await lead.resign()
    await client.delete(term.leader_key.encode())


async def test_observe_changes_follows_the_leader(client: EtcdClient,
                                                  keyspace: Keyspace) -> None:
    seen: list[str | None] = []
    changes = observe_changes(EtcdKV(client), keyspace, "obs", recheck=1.0)

    async def collect() -> None:
        async for info in changes:
            seen.append(info.address if info else None)

    task = asyncio.create_task(collect())
    try:
        cfg = LeadershipConfig(ttl=2)
        a = Leadership(EtcdKV(client), keyspace, "obs", "a:1", config=cfg)
        a.start()
        for _ in range(200):
            if seen[-1:] == ["a:1"]:
                break
            await asyncio.sleep(0.01)
        await a.resign()
        for _ in range(200):
            if seen[-1:] == [None]:
                break
            await asyncio.sleep(0.01)
        # Consecutive repeats: the same leader again once it has established.
        changes_seen = [x for i, x in enumerate(seen) if i == 0 or seen[i - 1] != x]
        assert changes_seen == [None, "a:1", None]
    finally:
        task.cancel()

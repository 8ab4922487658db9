"""The health-checked etcd client against three real members on loopback:
it leaves a frozen member without waiting for a socket to close, a write
caught on it reports an unknown outcome, streams require a leader, and
hostname endpoints work like IP literals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from drover.config import EtcdSettings
from drover.coord import EtcdClient, EtcdOutcomeUnknown, EtcdUnavailable, Session, connect
from drover.coord.deadline import caller_deadline
from drover.coord.etcd_kv import EtcdKV
from drover.coord.kv import Put, prefix_end
from drover.dev.etcd import EtcdCluster

pytestmark = pytest.mark.slow


@pytest.fixture
async def client(etcd_cluster3: EtcdCluster) -> AsyncIterator[EtcdClient]:
    c = await connect(EtcdSettings(endpoints=etcd_cluster3.endpoints), purpose="control")
    yield c
    await c.close()


async def _put(client: EtcdClient, key: bytes, value: bytes, *, bound: float = 5.0) -> None:
    with caller_deadline(bound):
        await EtcdKV(client).txn([], [Put(key, value)])


async def test_frozen_member_in_use_is_left_while_it_stays_frozen(
        client: EtcdClient, etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    assert client.pool is not None
    frozen = etcd_cluster3.member_at(client.pool.current.name)
    if etcd_cluster3.leader() == frozen:
        # A frozen *follower*: freezing the raft leader also stops writes
        # everywhere for an election, which is another test's subject.
        etcd_cluster3.move_leader((frozen + 1) % 3)
    session = await Session.open(EtcdKV(client), ttl=5)
    etcd_cluster3.pause(frozen)
    try:
        key = f"{etcd_prefix}/w".encode()
        ok = 0
        for i in range(20):
            with caller_deadline(3.0):
                try:
                    await _put(client, key, str(i).encode(), bound=3.0)
                    ok += 1
                except EtcdOutcomeUnknown:
                    pass  # the write caught on the frozen member
        assert ok >= 19
        assert client.pool.current.name != etcd_cluster3.endpoints[frozen]
        with caller_deadline(3.0):
            page = await EtcdKV(client).range(key, b"")
        assert page.kvs[0].value == b"19"
        await asyncio.sleep(1.0)  # a keepalive round on the new member
        session.check()  # the lease was renewed through another member
    finally:
        etcd_cluster3.resume(frozen)
        await session.close()


async def test_write_caught_on_a_frozen_member_is_outcome_unknown(
        client: EtcdClient, etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    assert client.pool is not None
    frozen = etcd_cluster3.member_at(client.pool.current.name)
    etcd_cluster3.pause(frozen)
    try:
        with pytest.raises(EtcdOutcomeUnknown) as e:
            await _put(client, f"{etcd_prefix}/u".encode(), b"x", bound=10.0)
        assert e.value.reason == "OUTCOME_UNKNOWN"
    finally:
        etcd_cluster3.resume(frozen)


async def test_caller_deadline_bounds_a_write(
        client: EtcdClient, etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    # Every member frozen: the write can only end by the caller's deadline.
    for i in range(3):
        etcd_cluster3.pause(i)
    try:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with caller_deadline(0.3), pytest.raises(EtcdOutcomeUnknown):
            await _put(client, f"{etcd_prefix}/d".encode(), b"x", bound=30.0)
        # Ended by the caller's 0.3 s, not the 30 s rpc_timeout (loose bound).
        assert loop.time() - start < 20.0
    finally:
        for i in range(3):
            etcd_cluster3.resume(i)


async def test_watch_on_a_member_without_a_leader_ends(
        etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    lone = 0
    c = await connect(EtcdSettings(endpoints=(etcd_cluster3.endpoints[lone],)),
                      purpose="bulk")
    try:
        prefix = etcd_prefix.encode()
        watch = await EtcdKV(c).watch(prefix, prefix_end(prefix), 0)  # created
        etcd_cluster3.pause(1)
        etcd_cluster3.pause(2)
        # hasleader: the member ends the stream once it has no leader,
        # instead of keeping it open and silent.
        with pytest.raises(EtcdUnavailable) as e:
            async with asyncio.timeout(30):
                async for _ in watch:
                    pass
        assert "UNAVAILABLE" in str(e.value)
        await watch.close()
    finally:
        etcd_cluster3.resume(1)
        etcd_cluster3.resume(2)
        await c.close()


async def test_hostname_endpoints(etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    names = tuple(ep.replace("127.0.0.1", "localhost") for ep in etcd_cluster3.endpoints)
    c = await connect(EtcdSettings(endpoints=names), purpose="control")
    try:
        assert c.pool is not None
        assert all(n.startswith("localhost@") for n in c.pool.endpoints)
        key = f"{etcd_prefix}/h".encode()
        await _put(c, key, b"v")
        assert (await EtcdKV(c).range(key, b"")).kvs[0].value == b"v"
    finally:
        await c.close()


async def test_a_write_through_a_member_without_a_leader_ends_at_the_write_timeout(
        etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    """etcd answers such a write only after its request timeout (7 s by
    default); the write timeout ends it sooner, OUTCOME_UNKNOWN, and leaves
    the member (marked bad: the next call goes elsewhere when it can)."""
    lone = 0
    c = await connect(EtcdSettings(endpoints=(etcd_cluster3.endpoints[lone],)),
                      purpose="control")
    kv = EtcdKV(c, write_timeout=1.0)
    try:
        await kv.txn([], [Put(f"{etcd_prefix}/before".encode(), b"x")])  # connected, working
        etcd_cluster3.pause(1)
        etcd_cluster3.pause(2)
        loop = asyncio.get_running_loop()
        start = loop.time()
        with caller_deadline(10.0), pytest.raises(EtcdOutcomeUnknown):
            await kv.txn([], [Put(f"{etcd_prefix}/lost".encode(), b"x")])
        took = loop.time() - start
        assert took < 3.0, f"the write took {took:.1f}s (etcd's own request timeout: 7 s)"
        assert c.pool is not None and not c.pool.health.good(etcd_cluster3.endpoints[lone])
    finally:
        etcd_cluster3.resume(1)
        etcd_cluster3.resume(2)
        await c.close()


def test_the_write_timeout_is_positive() -> None:
    with pytest.raises(ValueError, match="write_timeout"):
        EtcdKV(asyncio.Future, write_timeout=0)  # type: ignore[arg-type]

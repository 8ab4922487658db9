"""EtcdKV.lease_keepalive on its one shared LeaseKeepAlive stream
(:mod:`drover.coord.keepalive_mux`) against a real etcd: many leases on one
stream, a revoked lease, a broken stream, a restarted member."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from drover.config import EtcdSettings
from drover.coord import EtcdClient, connect
from drover.coord.errors import ClientClosed, EtcdUnavailable
from drover.coord.etcd_kv import EtcdKV
from drover.coord.kv import LeaseNotFound
from drover.dev.etcd import EtcdServer

TTL = 60


@pytest.fixture
async def client(etcd_endpoint: str) -> AsyncIterator[EtcdClient]:
    c = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="bulk")
    yield c
    await c.close()


def streams(client: EtcdClient) -> int:
    """Streams open on the member in use."""
    assert client.pool is not None
    return len(client.pool.current.streams)


async def test_keepalives_of_200_leases_in_flight_together_share_one_stream(
        client: EtcdClient) -> None:
    kv = EtcdKV(client)
    leases = await asyncio.gather(*(kv.lease_grant(TTL) for _ in range(200)))
    try:
        before = streams(client)
        # 1,000 keepalives in flight at once, five per lease
        ttls = await asyncio.gather(*(kv.lease_keepalive(lease)
                                      for _ in range(5) for lease in leases))
        assert ttls == [TTL] * 1000
        assert kv._keepalives.opened == 1 and streams(client) == before + 1
        assert kv._keepalives.waiting == 0

        gone = leases[0]
        await kv.lease_revoke(gone)
        got = await asyncio.gather(*(kv.lease_keepalive(lease) for lease in leases[:20]),
                                   return_exceptions=True)
        assert isinstance(got[0], LeaseNotFound) and got[0].lease == gone
        assert got[1:] == [TTL] * 19  # the others on the same stream, unaffected
        assert kv._keepalives.opened == 1
    finally:
        await kv.close()
        await asyncio.gather(*(kv.lease_revoke(lease) for lease in leases[1:]))
    assert streams(client) == before
    with pytest.raises(ClientClosed):
        await kv.lease_keepalive(leases[1])


async def test_a_broken_stream_fails_what_waits_on_it_and_the_next_call_reopens(
        client: EtcdClient) -> None:
    kv = EtcdKV(client)
    leases = await asyncio.gather(*(kv.lease_grant(TTL) for _ in range(50)))
    try:
        assert await kv.lease_keepalive(leases[0]) == TTL
        assert client.pool is not None
        calls = [asyncio.create_task(kv.lease_keepalive(lease)) for lease in leases]
        await asyncio.sleep(0)  # all sent, none answered yet
        # what the pool does to a stream whose member turns bad
        for s in list(client.pool.current.streams):
            s.abort("broken by the test")
        async with asyncio.timeout(5):  # at once, not after the keepalive bound
            got = await asyncio.gather(*calls, return_exceptions=True)
        assert all(r == TTL or isinstance(r, EtcdUnavailable) for r in got), got
        assert any(isinstance(r, EtcdUnavailable) for r in got)
        assert kv._keepalives.waiting == 0
        assert await asyncio.gather(*(kv.lease_keepalive(lease) for lease in leases)) == (
            [TTL] * len(leases))
        assert kv._keepalives.opened == 2
    finally:
        await kv.close()
        await asyncio.gather(*(kv.lease_revoke(lease) for lease in leases))


@pytest.fixture
def own_etcd() -> Iterator[EtcdServer]:
    server = EtcdServer(name="coord-keepalive").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
async def test_keepalives_go_on_after_the_etcd_member_restarts(own_etcd: EtcdServer) -> None:
    client = await connect(EtcdSettings(endpoints=(own_etcd.endpoint,)), purpose="bulk")
    kv = EtcdKV(client, timeout=10.0)
    try:
        lease = await kv.lease_grant(TTL)
        assert await kv.lease_keepalive(lease) == TTL
        own_etcd.pause()
        waiting = asyncio.create_task(kv.lease_keepalive(lease))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        t0 = time.monotonic()
        own_etcd.kill()
        with pytest.raises(EtcdUnavailable):
            async with asyncio.timeout(5):
                await waiting  # the stream broke: failed at once, not at the 10 s bound
        assert time.monotonic() - t0 < 5
        await asyncio.to_thread(own_etcd.restart)
        # the lease is on disk; the channel reconnects after gRPC's backoff
        async with asyncio.timeout(30):
            while True:
                try:
                    assert await kv.lease_keepalive(lease) == TTL
                    break
                except EtcdUnavailable:
                    await asyncio.sleep(0.2)
        assert kv._keepalives.opened >= 2
        assert await asyncio.gather(*(kv.lease_keepalive(lease) for _ in range(10))) == (
            [TTL] * 10)
    finally:
        await kv.close()
        await client.close()

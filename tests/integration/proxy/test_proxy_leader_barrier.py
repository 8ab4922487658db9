"""Leader routing through broker failovers, and the convergence barrier."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from polling import eventually
from proxy_harness import channel_to, start_broker, start_proxy, start_state

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.config import EtcdSettings
from drover.coord import Election, EtcdClient, Keyspace, Session, connect, list_members
from drover.coord.etcd_kv import EtcdKV
from drover.rpc.server import DroverServer


@pytest.fixture
async def etcd(etcd_endpoint: str, etcd_prefix: str) -> AsyncIterator[EtcdClient]:
    client = await connect(EtcdSettings(endpoints=(etcd_endpoint,), prefix=etcd_prefix),
                           purpose="control")
    yield client
    await client.close()


@pytest.fixture
async def servers() -> AsyncIterator[list[DroverServer]]:
    started: list[DroverServer] = []
    yield started
    for server in reversed(started):
        await server.stop(0)


async def test_leader_followed_through_failover_and_hints(
    etcd_endpoint: str, etcd_prefix: str, etcd: EtcdClient, servers: list[DroverServer]
) -> None:
    keyspace = Keyspace(etcd_prefix)
    b1, f1 = await start_broker(etcd_endpoint, etcd_prefix, "b1")
    b2, f2 = await start_broker(etcd_endpoint, etcd_prefix, "b2")
    servers += [b1, b2]
    sessions = [await Session.open(EtcdKV(etcd), 2) for _ in range(2)]
    e1 = Election(EtcdKV(etcd), keyspace, "broker", sessions[0], address=f1.address)
    e2 = Election(EtcdKV(etcd), keyspace, "broker", sessions[1], address=f2.address)
    term1 = await e1.campaign()
    second = asyncio.ensure_future(e2.campaign())
    f1.leader = f2.leader = f1.address
    try:
        proxy, app = await start_proxy(etcd_endpoint, etcd_prefix, "p1")
        servers.append(proxy)
        channel = channel_to(proxy)
        via = broker_pb2_grpc.EvalBrokerServiceStub(channel)
        await eventually(lambda: app.lists.get("broker").leader == f1.address)
        for _ in range(3):
            assert (await via.Dequeue(broker_pb2.DequeueRequest(), timeout=3)).token == "b1"
        assert f2.calls["Dequeue"] == 0  # the leader is called first, not the front

        # Failover: b1 resigns, b2 wins; the proxy follows the election key.
        await e1.resign(term1)
        term2 = await asyncio.wait_for(second, 5)
        f1.leader = f2.leader = f2.address
        await eventually(lambda: app.lists.get("broker").leader == f2.address)
        assert (await via.Dequeue(broker_pb2.DequeueRequest(), timeout=3)).token == "b2"

        # With discovery held back the proxy still believes b2; b2 answers with
        # a drover-leader hint and the proxy follows it within the same call.
        assert app.discovery is not None
        app.discovery.pause()
        await e2.resign(term2)
        await asyncio.wait_for(e1.campaign(), 5)
        f1.leader = f2.leader = f1.address
        before = f2.calls["Dequeue"]
        assert (await via.Dequeue(broker_pb2.DequeueRequest(), timeout=3)).token == "b1"
        assert f2.calls["Dequeue"] == before + 1
        assert app.lists.get("broker").leader == f1.address
        app.discovery.resume()
        await channel.close()
    finally:
        second.cancel()
        for session in sessions:
            await session.close()


async def test_a_leader_whose_lease_is_gone_is_not_called_even_when_hinted(
    etcd_endpoint: str, etcd_prefix: str, etcd: EtcdClient, servers: list[DroverServer]
) -> None:
    """b1's lease ends (its election key goes) while b2 still believes b1
    leads: the proxy neither routes to b1 nor follows b2's stale hint to it,
    and calls b2 as soon as it is elected."""
    keyspace = Keyspace(etcd_prefix)
    b1, f1 = await start_broker(etcd_endpoint, etcd_prefix, "b1")
    b2, f2 = await start_broker(etcd_endpoint, etcd_prefix, "b2")
    servers += [b1, b2]
    s1 = await Session.open(EtcdKV(etcd), 2)
    s2 = await Session.open(EtcdKV(etcd), 2)
    try:
        await Election(EtcdKV(etcd), keyspace, "broker", s1, address=f1.address).campaign()
        f1.leader = f2.leader = f1.address
        proxy, app = await start_proxy(etcd_endpoint, etcd_prefix, "p1")
        servers.append(proxy)
        lst = app.lists.get("broker")
        await eventually(lambda: lst.leader == f1.address)
        via = broker_pb2_grpc.EvalBrokerServiceStub(channel_to(proxy))
        assert (await via.Dequeue(broker_pb2.DequeueRequest(), timeout=3)).token == "b1"

        await s1.close()  # b1's lease is gone; b2 has not caught up (still hints b1)
        await eventually(lambda: lst.leader is None)
        assert f1.address in lst.deposed
        before = f1.calls["Dequeue"]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await via.Dequeue(broker_pb2.DequeueRequest(), timeout=3)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE  # b2: not the leader
        assert f1.calls["Dequeue"] == before  # never routed to the deposed leader

        await Election(EtcdKV(etcd), keyspace, "broker", s2, address=f2.address).campaign()
        f1.leader = f2.leader = f2.address
        await eventually(lambda: lst.leader == f2.address)
        assert (await via.Dequeue(broker_pb2.DequeueRequest(), timeout=3)).token == "b2"
        assert f1.calls["Dequeue"] == before
    finally:
        await s2.close()


async def test_three_proxies_converge_and_a_held_back_one_is_reported(
    etcd_endpoint: str, etcd_prefix: str, etcd: EtcdClient, servers: list[DroverServer]
) -> None:
    proxies = [await start_proxy(etcd_endpoint, etcd_prefix, f"p{i}") for i in (1, 2, 3)]
    servers += [p for p, _ in proxies]
    (p1, a1), _, (p3, a3) = proxies
    channel = channel_to(p1)
    stub = proxy_pb2_grpc.ClientProxyServiceStub(channel)
    assert a3.discovery is not None
    a3.discovery.pause()

    backend, _ = await start_state(etcd_endpoint, etcd_prefix, "s1")
    servers.append(backend)
    await eventually(lambda: bool(a1.lists.get("state").servers))
    changed_at = a1.lists.applied_revision
    # p2 is not held back: let it apply the change (a loaded CI box may need
    # longer than the barrier's 500 ms below) so that only p3 is behind.
    async def p2_published() -> bool:
        members = await list_members(EtcdKV(etcd), Keyspace(etcd_prefix), "proxy")
        return any(m.replica == "p2" and m.applied_revision >= changed_at
                   for m in members.members)

    await eventually(p2_published)
    # Any later revision works too: it maps to the last change at or below it.
    target = (await list_members(EtcdKV(etcd), Keyspace(etcd_prefix), "state")).revision
    assert target >= changed_at

    request = proxy_pb2.WaitForConvergenceRequest(revision=target)
    request.timeout.FromMilliseconds(500)
    held = await stub.WaitForConvergence(request, timeout=3)
    assert not held.converged
    assert [r.replica for r in held.replicas] == ["p1", "p2", "p3"]
    assert [r.replica for r in held.behind] == ["p3"]
    assert held.behind[0].applied_revision < changed_at

    a3.discovery.resume()
    request.timeout.FromSeconds(5)
    done = await stub.WaitForConvergence(request, timeout=6)
    assert done.converged and not done.behind
    assert all(r.applied_revision >= changed_at for r in done.replicas)
    assert a3.lists.get("state").servers  # the held-back proxy now routes to s1

    # Calls through any replica reach the new backend.
    via = state_pb2_grpc.StateServiceStub(channel_to(p3))
    assert (await via.GetJob(state_pb2.GetJobRequest(id="j"), timeout=3)).job.name == "s1"
    await channel.close()


async def test_killed_backends_are_routed_around_until_their_lease_ends(
    etcd_endpoint: str, etcd_prefix: str, servers: list[DroverServer]
) -> None:
    s1, _ = await start_state(etcd_endpoint, etcd_prefix, "s1")
    s2, _ = await start_state(etcd_endpoint, etcd_prefix, "s2")
    proxy, app = await start_proxy(etcd_endpoint, etcd_prefix, "p1")
    servers += [s2, proxy]
    await eventually(lambda: len(app.lists.get("state").servers) == 2)
    # Killed without deregistering: membership keeps s1 until its 2 s lease ends.
    assert s1._server is not None
    await s1._server.stop(0)
    channel = channel_to(proxy)
    via = state_pb2_grpc.StateServiceStub(channel)
    for _ in range(5):
        assert (await via.GetJob(state_pb2.GetJobRequest(id="w"), timeout=3)).job.name == "s2"
    await s1.stop(0)
    await eventually(lambda: len(app.lists.get("state").servers) == 1)
    await channel.close()


async def test_unknown_method_is_unimplemented(
    etcd_endpoint: str, etcd_prefix: str, servers: list[DroverServer]
) -> None:
    proxy, _ = await start_proxy(etcd_endpoint, etcd_prefix, "p1")
    servers.append(proxy)
    channel = channel_to(proxy)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await channel.unary_unary("/drover.state.v1.StateService/NoSuchMethod")(b"", timeout=2)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    await channel.close()

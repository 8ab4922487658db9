"""Clients talking only to the proxy: forwarding, failover, replacement, versions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from polling import eventually
from proxy_harness import (
    STATE,
    FakeState,
    Hang,
    channel_to,
    start_proxy,
    start_state,
)

from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.proxy.app import ProxyApp
from drover.rpc.remote import error_info
from drover.rpc.server import DroverServer


class Cluster:
    def __init__(self, endpoint: str, prefix: str) -> None:
        self.endpoint = endpoint
        self.prefix = prefix
        self.servers: list[DroverServer] = []
        self.channels: list[grpc.aio.Channel] = []

    async def state(self, replica: str, **kw: Any) -> tuple[DroverServer, FakeState]:
        server, fake = await start_state(self.endpoint, self.prefix, replica, **kw)
        self.servers.append(server)
        return server, fake

    async def proxy(self, replica: str = "p1", **kw: Any) -> tuple[DroverServer, ProxyApp]:
        server, app = await start_proxy(self.endpoint, self.prefix, replica, **kw)
        self.servers.append(server)
        return server, app

    def channel(self, server: DroverServer) -> grpc.aio.Channel:
        ch = channel_to(server)
        self.channels.append(ch)
        return ch

    async def close(self) -> None:
        for ch in self.channels:
            await ch.close()
        for server in reversed(self.servers):
            await server.stop(0)


@pytest.fixture
async def cluster(etcd_endpoint: str, etcd_prefix: str) -> AsyncIterator[Cluster]:
    c = Cluster(etcd_endpoint, etcd_prefix)
    try:
        yield c
    finally:
        await c.close()


def state_addresses(app: ProxyApp) -> set[str]:
    return {s.address for s in app.lists.get("state").servers}


async def test_unary_and_stream_forwarded_byte_for_byte(cluster: Cluster) -> None:
    backend, _ = await cluster.state("s1")
    proxy, app = await cluster.proxy()
    await eventually(lambda: bool(state_addresses(app)))
    direct = state_pb2_grpc.StateServiceStub(cluster.channel(backend))
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))

    request = state_pb2.GetJobRequest(namespace="default", id="web")
    call = via.GetJob(request, metadata=(("x-echo", "42"),), timeout=3)
    response = await call
    assert response.job.id == "web" and response.job.name == "s1"
    # The backend saw the caller's deadline (about 3 s; grpc-timeout is encoded
    # with rounding, so allow a hair above).
    assert 2.0 < float(response.job.namespace) <= 3.05
    assert ("x-initial", "42") in tuple(await call.initial_metadata())
    assert ("x-echo-back", "42") in tuple(await call.trailing_metadata())
    # Same bytes as a direct call (modulo the deadline the backend reports).
    direct_resp = await direct.GetJob(request, timeout=3)
    direct_resp.job.namespace = response.job.namespace
    assert direct_resp.SerializeToString() == response.SerializeToString()

    stream = via.Subscribe(state_pb2.SubscribeRequest(from_index=10), timeout=3)
    assert [m.index async for m in stream] == [11, 12, 13]


async def test_errors_keep_their_error_info(cluster: Cluster) -> None:
    await cluster.state("s1")
    proxy, app = await cluster.proxy()
    await eventually(lambda: bool(state_addresses(app)))
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await via.GetJob(state_pb2.GetJobRequest(id="missing"), timeout=3)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    info = error_info(caught.value)
    assert info is not None and info.reason == "JOB_NOT_FOUND" and info.metadata["job"] == "missing"

    # A stream that fails after its messages: messages, then the rich status.
    seen = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for m in via.Subscribe(state_pb2.SubscribeRequest(namespace="fail"), timeout=3):
            seen.append(m.index)
    assert seen == [1, 2, 3]
    info = error_info(caught.value)
    assert info is not None and info.reason == "JOB_NOT_FOUND"


async def test_reads_fail_over_and_writes_are_not_repeated(cluster: Cluster) -> None:
    hang = Hang()
    s1, f1 = await cluster.state("s1", hang=hang)
    s2, f2 = await cluster.state("s2", hang=hang)
    proxy, app = await cluster.proxy()
    await eventually(lambda: len(state_addresses(app)) == 2)
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    by_replica = {"s1": (s1, f1), "s2": (s2, f2)}

    # A read whose server dies mid-call is retried on the other one.
    read = asyncio.ensure_future(via.GetJob(state_pb2.GetJobRequest(id="hang"), timeout=5))
    await asyncio.wait_for(hang.entered.wait(), 3)
    dead = next(r for r, (_, f) in by_replica.items() if f.calls["GetJob"])
    alive = "s2" if dead == "s1" else "s1"
    await by_replica[dead][0].stop(0)
    response = await read
    assert response.job.name == alive
    cluster.servers.remove(by_replica[dead][0])

    # A write whose server dies mid-call is not sent again.
    hang.armed, hang.entered = True, asyncio.Event()
    s3, f3 = await cluster.state("s3", hang=hang)
    await eventually(lambda: len(state_addresses(app)) == 2)
    live = {alive: by_replica[alive], "s3": (s3, f3)}
    write = asyncio.ensure_future(
        via.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(id="hang")), timeout=5)
    )
    await asyncio.wait_for(hang.entered.wait(), 3)
    victim = next(r for r, (_, f) in live.items() if f.calls["RegisterJob"])
    other = next(r for r in live if r != victim)
    await live[victim][0].stop(0)
    cluster.servers.remove(live[victim][0])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await write
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert live[other][1].calls["RegisterJob"] == 0


async def test_every_backend_replaced_at_new_addresses(cluster: Cluster) -> None:
    old = [await cluster.state(f"old{i}") for i in range(2)]
    proxy, app = await cluster.proxy()
    await eventually(lambda: len(state_addresses(app)) == 2)
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    assert (await via.GetJob(state_pb2.GetJobRequest(id="a"), timeout=3)).job.name.startswith("old")

    new = [await cluster.state(f"new{i}") for i in range(2)]
    await eventually(lambda: len(state_addresses(app)) == 4)
    for server, _ in old:
        await server.stop(0)
        cluster.servers.remove(server)
    new_addresses = {s.ctx.address for s, _ in new if s.ctx}
    for _ in range(10):
        response = await via.GetJob(state_pb2.GetJobRequest(id="b"), timeout=3)
        assert response.job.name.startswith("new")
    await eventually(lambda: state_addresses(app) == new_addresses)


async def test_newer_rpc_version_is_skipped(cluster: Cluster) -> None:
    await cluster.state("v1")
    await cluster.state("v2", rpc_version=2)
    proxy, app = await cluster.proxy()
    await eventually(lambda: len(state_addresses(app)) == 1)
    stub = proxy_pb2_grpc.ClientProxyServiceStub(cluster.channel(proxy))
    resp = await stub.ListServers(proxy_pb2.ListServersRequest(service="state"), timeout=3)
    assert [s.replica for s in resp.lists[0].servers] == ["v1"]
    assert resp.lists[0].servers[0].rpc_version == 1
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    for _ in range(5):
        assert (await via.GetJob(state_pb2.GetJobRequest(id="x"), timeout=3)).job.name == "v1"


async def test_list_and_rebalance_servers_and_bad_input(cluster: Cluster) -> None:
    await cluster.state("s1")
    await cluster.state("s2")
    proxy, app = await cluster.proxy()
    await eventually(lambda: len(state_addresses(app)) == 2)
    stub = proxy_pb2_grpc.ClientProxyServiceStub(cluster.channel(proxy))

    listed = await stub.ListServers(proxy_pb2.ListServersRequest(), timeout=3)
    assert [lst.service for lst in listed.lists] == ["state", "broker", "deployments"]
    assert listed.revision > 0
    rebalanced = await stub.RebalanceServers(
        proxy_pb2.RebalanceServersRequest(service="state"), timeout=3
    )
    servers = rebalanced.lists[0].servers
    assert {s.replica for s in servers} == {"s1", "s2"}
    assert servers[0].healthy and rebalanced.lists[0].HasField("next_rebalance")

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ListServers(proxy_pb2.ListServersRequest(service="nope"), timeout=3)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert (info := error_info(caught.value)) is not None and info.reason == "UNKNOWN_SERVICE"

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.WaitForConvergence(proxy_pb2.WaitForConvergenceRequest(revision=0), timeout=3)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info := error_info(caught.value)) is not None and info.reason == "INVALID_REVISION"

    request = proxy_pb2.WaitForConvergenceRequest(revision=1)
    request.timeout.seconds = -1
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.WaitForConvergence(request, timeout=3)
    # Refused by the server's request checks before the handler runs.
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info := error_info(caught.value)) is not None and info.metadata["field"] == "timeout"


async def test_reflection_lists_forwarded_services(cluster: Cluster) -> None:
    proxy, _ = await cluster.proxy()
    stub = reflection_pb2_grpc.ServerReflectionStub(cluster.channel(proxy))

    async def ask() -> AsyncIterator[Any]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    names: set[str] = set()
    async for resp in stub.ServerReflectionInfo(ask(), timeout=3):
        names.update(s.name for s in resp.list_services_response.service)
    assert {STATE, "drover.broker.v1.EvalBrokerService",
            "drover.proxy.v1.ClientProxyService"} <= names


async def test_no_backend_fails_unavailable_within_the_deadline(cluster: Cluster) -> None:
    proxy, _ = await cluster.proxy()
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await via.GetJob(state_pb2.GetJobRequest(id="x"), timeout=2)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert (info := error_info(caught.value)) is not None and info.reason == "NO_SERVER"


async def test_a_server_leaving_membership_ends_its_calls_at_once(cluster: Cluster) -> None:
    """The hung server still answers pings (the hold would not end its calls);
    leaving membership does: the read goes to the other server, the write is
    answered OUTCOME_UNKNOWN, both long before the hang (30 s) or deadline (60 s)."""
    hang = Hang()
    s1, f1 = await cluster.state("s1", hang=hang)
    s2, f2 = await cluster.state("s2", hang=hang)
    proxy, app = await cluster.proxy()
    await eventually(lambda: len(state_addresses(app)) == 2)
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    by_replica = {"s1": (s1, f1), "s2": (s2, f2)}

    read = asyncio.ensure_future(via.GetJob(state_pb2.GetJobRequest(id="hang"), timeout=60))
    await asyncio.wait_for(hang.entered.wait(), 3)
    hung = next(r for r, (_, f) in by_replica.items() if f.calls["GetJob"])
    other = "s2" if hung == "s1" else "s1"
    registration = by_replica[hung][0].ctx.registration  # type: ignore[union-attr]
    assert registration is not None
    hang.armed, hang.entered = True, asyncio.Event()
    write = asyncio.ensure_future(via.RegisterJob(
        state_pb2.RegisterJobRequest(job=job_pb2.Job(id="hang")), timeout=60))
    await asyncio.wait_for(hang.entered.wait(), 3)
    assert by_replica[hung][1].calls["RegisterJob"] == 1
    await registration.close()  # leaves membership; the process keeps running

    response = await asyncio.wait_for(read, 20)
    assert response.job.name == other
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await asyncio.wait_for(write, 20)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    info = error_info(caught.value)
    assert info is not None and info.reason == "OUTCOME_UNKNOWN"
    assert info.metadata["server"] == by_replica[hung][0].ctx.address  # type: ignore[union-attr]
    assert by_replica[other][1].calls["RegisterJob"] == 0  # not repeated elsewhere
    assert app.holds.ended == {"left_membership": 2}  # counted for drover_proxy_attempts_ended


async def test_a_stream_that_cannot_resume_ends_with_the_index_to_resume_from(
    cluster: Cluster,
) -> None:
    """Its only replica gone, a Subscribe stream through the proxy ends with
    UNAVAILABLE STREAM_NOT_RESUMED and the last index it delivered: never silence."""
    backend, _ = await cluster.state("s1")
    proxy, app = await cluster.proxy()
    await eventually(lambda: bool(state_addresses(app)))
    via = state_pb2_grpc.StateServiceStub(cluster.channel(proxy))
    stream = via.Subscribe(state_pb2.SubscribeRequest(namespace="hold", from_index=10),
                           timeout=60)
    seen = [(await stream.read()).index for _ in range(3)]
    assert seen == [11, 12, 13]
    await backend.stop(0)
    cluster.servers.remove(backend)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await asyncio.wait_for(stream.read(), 30)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    info = error_info(caught.value)
    assert info is not None and info.reason == "STREAM_NOT_RESUMED"
    assert info.metadata["index"] == "13"

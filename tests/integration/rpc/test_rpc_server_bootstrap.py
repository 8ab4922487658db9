"""A real grpc.aio DroverServer: health, reflection, errors, shutdown."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from drover import errors
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.config import ServeSettings
from drover.coord.etcd_kv import EtcdKV
from drover.dev.ports import free_port
from drover.rpc.app import load_app_factory, service_names
from drover.rpc.health import LIVENESS
from drover.rpc.remote import error_info, leader_hint
from drover.rpc.server import AppContext, DroverServer, ServiceBinding
from drover.telemetry import setup

STATE = "drover.state.v1.StateService"


class _Servicer(state_pb2_grpc.StateServiceServicer):
    async def GetJob(self, request: Any, context: Any) -> Any:
        if request.id == "leader":
            raise errors.NotLeader("state", "127.0.0.9:1")
        raise errors.NotFound(f"job {request.id!r} not found")

    async def Subscribe(self, request: Any, context: Any) -> AsyncIterator[Any]:
        yield state_pb2.SubscribeResponse(index=1)
        raise errors.InvalidArgument("stream broke on purpose")


class _GatedApp:
    """Ready only when the test says so."""

    def __init__(self) -> None:
        self.bindings = [ServiceBinding(STATE, _Servicer(),
                                        state_pb2_grpc.add_StateServiceServicer_to_server)]
        self.ctx: AppContext | None = None
        self.stopped = False

    async def prepare(self) -> None:
        return None

    async def start(self, ctx: AppContext) -> None:
        self.ctx = ctx

    async def stop(self) -> None:
        self.stopped = True


@pytest.fixture
async def gated() -> AsyncIterator[tuple[DroverServer, _GatedApp, grpc.aio.Channel]]:
    app = _GatedApp()
    server = DroverServer(ServeSettings(service="state", listen="127.0.0.1:0",
                                        health_listen="127.0.0.1:0"), app)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield server, app, channel
    finally:
        await channel.close()
        await server.stop(0)


async def _health(channel: grpc.aio.Channel, service: str = "") -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    resp = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(resp.status)


async def test_readiness_follows_the_app(gated: Any) -> None:
    server, app, channel = gated
    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    assert await _health(channel) == not_serving
    assert await _health(channel, STATE) == not_serving
    await app.ctx.health.set_ready(STATE)
    assert await _health(channel) == serving
    assert await _health(channel, STATE) == serving
    # The plaintext health-only port reports the same.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.health_port}") as hc:
        assert await _health(hc) == serving


async def test_health_watch_streams_every_change(gated: Any) -> None:
    """Watch is a writer-style stream handler (it ``context.write`` s): the
    interceptors must keep it one, or every Watch fails with UNKNOWN."""
    _, app, channel = gated
    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    stub = health_pb2_grpc.HealthStub(channel)
    watch = stub.Watch(health_pb2.HealthCheckRequest(service=STATE), timeout=10)
    assert (await watch.read()).status == not_serving
    await app.ctx.health.set_ready(STATE)
    assert (await watch.read()).status == serving
    await app.ctx.health.set_ready(STATE, False)
    assert (await watch.read()).status == not_serving
    watch.cancel()
    # An unknown service is reported as such, not as an error.
    unknown = stub.Watch(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert (await unknown.read()).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
    unknown.cancel()


async def test_unknown_health_service_is_not_found(gated: Any) -> None:
    _, _, channel = gated
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await _health(channel, "no.such.Service")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


async def test_drover_errors_become_statuses_with_error_info(gated: Any) -> None:
    _, _, channel = gated
    stub = state_pb2_grpc.StateServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await stub.GetJob(state_pb2.GetJobRequest(id="web"), timeout=5)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert e.value.details() == "job 'web' not found"
    info = error_info(e.value)
    assert info is not None and (info.reason, info.domain) == ("NOT_FOUND", "drover")
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await stub.GetJob(state_pb2.GetJobRequest(id="leader"), timeout=5)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert leader_hint(e.value) == "127.0.0.9:1"


async def test_stream_errors_map_too(gated: Any) -> None:
    _, _, channel = gated
    stub = state_pb2_grpc.StateServiceStub(channel)
    got = []
    with pytest.raises(grpc.aio.AioRpcError) as e:
        async for resp in stub.Subscribe(state_pb2.SubscribeRequest(), timeout=5):
            got.append(resp.index)
    assert got == [1]
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_unbuilt_rpc_is_unimplemented(gated: Any) -> None:
    _, _, channel = gated
    stub = state_pb2_grpc.StateServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await stub.ListNodes(state_pb2.ListNodesRequest(), timeout=5)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("stub_service", ["v1alpha", "v1"])
async def test_reflection_lists_services(gated: Any, stub_service: str) -> None:
    _, _, channel = gated
    method = f"/grpc.reflection.{stub_service}.ServerReflection/ServerReflectionInfo"
    call = channel.stream_stream(
        method,
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    stream = call(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
    names = set()
    async for resp in stream:
        names = {s.name for s in resp.list_services_response.service}
    assert {STATE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
            "grpc.reflection.v1.ServerReflection"} <= names


async def test_graceful_stop_turns_health_off_and_stops_app() -> None:
    app = _GatedApp()
    server = DroverServer(ServeSettings(service="state"), app)
    await server.start()
    ctx = app.ctx
    assert ctx is not None  # start handed the app its context
    await ctx.health.set_ready(STATE)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        assert await _health(channel) == health_pb2.HealthCheckResponse.SERVING
        stop = asyncio.create_task(server.stop(grace=1))
        await asyncio.wait_for(stop, 5)
    assert app.stopped
    # After shutdown health answers NOT_SERVING for everything (and ignores late set_ready).
    await ctx.health.set_ready(STATE, True)
    resp = await ctx.health.servicer.Check(health_pb2.HealthCheckRequest(service=""), None)
    assert resp.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_every_service_app_starts_and_is_ready(etcd_endpoint: str,
                                                    etcd_prefix: str) -> None:
    """Each service found through the entry points serves and reports SERVING
    (state first: the others need its address)."""
    from drover.config import EtcdSettings

    assert service_names() == ["broker", "deployments", "proxy", "state"]
    etcd = EtcdSettings(endpoints=(etcd_endpoint,), prefix=etcd_prefix, session_ttl=3)
    servers: list[DroverServer] = []
    state_address: tuple[str, ...] = ()
    try:
        for name in ["state", "broker", "deployments", "proxy"]:
            settings = ServeSettings(service=name, etcd=etcd, state_addresses=state_address)
            server = DroverServer(settings, load_app_factory(name)(settings), membership=True)
            ctx = await server.start()
            servers.append(server)
            if name == "state":
                state_address = (ctx.address,)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                # Watch (not a Check loop): it must work on every service, and
                # it reports SERVING once the service can really serve.
                watch = health_pb2_grpc.HealthStub(channel).Watch(
                    health_pb2.HealthCheckRequest(service=""), timeout=20)
                seen = []
                async for resp in watch:
                    seen.append(resp.status)
                    if resp.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                watch.cancel()
                assert seen[-1] == health_pb2.HealthCheckResponse.SERVING, (name, seen)
                live = health_pb2_grpc.HealthStub(channel).Watch(
                    health_pb2.HealthCheckRequest(service=LIVENESS), timeout=5)
                assert (await live.read()).status == health_pb2.HealthCheckResponse.SERVING
                live.cancel()
                assert await _health(channel) == health_pb2.HealthCheckResponse.SERVING, name
    finally:
        for server in reversed(servers):
            await server.stop(0)


async def test_metrics_endpoint_exports_call_duration(gated: Any) -> None:
    port = free_port()
    bound = setup(service="state", metrics_listen=f"127.0.0.1:{port}")
    _, _, channel = gated
    stub = state_pb2_grpc.StateServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError):
        await stub.GetJob(state_pb2.GetJobRequest(id="web"), timeout=5)
    if bound is None:
        pytest.fail("metrics were configured earlier without a port in this process")
    body = await asyncio.to_thread(
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{bound}/metrics", timeout=5).read()
    )
    text = body.decode()
    assert "rpc_server_call_duration" in text
    assert 'rpc_method="GetJob"' in text


async def test_membership_entry_lives_with_the_server(etcd_endpoint: str, etcd_prefix: str) -> None:
    from drover.config import EtcdSettings
    from drover.coord import Keyspace, connect, list_members

    etcd = EtcdSettings(endpoints=(etcd_endpoint,), prefix=etcd_prefix, session_ttl=3)
    settings = ServeSettings(service="state", replica="state-a", etcd=etcd)
    server = DroverServer(settings, _GatedApp(), membership=True)
    ctx = await server.start()
    client = await connect(etcd, purpose="control")
    try:
        assert ctx.registration is not None
        await asyncio.wait_for(ctx.registration.registered.wait(), 5)
        members = await list_members(EtcdKV(client), Keyspace(etcd_prefix), "state")
        assert [(m.replica, m.address, m.rpc_version) for m in members.members] == [
            ("state-a", ctx.address, settings.rpc_version)]
        await server.stop(0)
        members = await list_members(EtcdKV(client), Keyspace(etcd_prefix), "state")
        assert members.members == ()
    finally:
        await client.close()

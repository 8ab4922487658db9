"""Backends and proxies for the proxy's integration tests: real grpc.aio
DroverServers with membership in the session etcd, fake servicers that say
which replica answered."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from typing import Any

import grpc

from drover import errors
from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.config import EtcdSettings, ServeSettings
from drover.proxy.app import ProxyApp
from drover.proxy.config import ProxyConfig
from drover.rpc.server import AppContext, DroverServer, ServiceBinding

STATE = "drover.state.v1.StateService"
BROKER = "drover.broker.v1.EvalBrokerService"


class JobMissing(errors.NotFound):
    reason = "JOB_NOT_FOUND"


class Hang:
    """The first call that asks for it hangs (until the test kills its server)."""

    def __init__(self) -> None:
        self.armed = True
        self.entered = asyncio.Event()

    async def maybe(self) -> None:
        if self.armed:
            self.armed = False
            self.entered.set()
            await asyncio.sleep(30)


class FakeState(state_pb2_grpc.StateServiceServicer):
    def __init__(self, replica: str, hang: Hang | None = None) -> None:
        self.replica = replica
        self.hang = hang or Hang()
        self.calls: collections.Counter[str] = collections.Counter()

    async def GetJob(self, request: Any, context: Any) -> Any:
        self.calls["GetJob"] += 1
        md = dict(context.invocation_metadata())
        if request.id == "missing":
            raise JobMissing(f"job {request.id!r} not found", metadata={"job": request.id})
        if request.id == "hang":
            await self.hang.maybe()
        if "x-echo" in md:
            await context.send_initial_metadata((("x-initial", md["x-echo"]),))
            context.set_trailing_metadata((("x-echo-back", md["x-echo"]),))
        remaining = context.time_remaining()
        return state_pb2.GetJobResponse(
            job=job_pb2.Job(id=request.id, name=self.replica,
                            namespace=f"{remaining:.3f}" if remaining is not None else "none")
        )

    async def RegisterJob(self, request: Any, context: Any) -> Any:
        self.calls["RegisterJob"] += 1
        if request.job.id == "hang":
            await self.hang.maybe()
        return state_pb2.RegisterJobResponse(eval_id=self.replica)

    async def Subscribe(self, request: Any, context: Any) -> AsyncIterator[Any]:
        self.calls["Subscribe"] += 1
        for i in range(1, 4):
            yield state_pb2.SubscribeResponse(index=request.from_index + i)
        if request.namespace == "fail":
            raise JobMissing("stream ended with an error", metadata={"job": "x"})
        if request.namespace == "hold":  # stays open until its server stops
            await asyncio.sleep(30)


class FakeBroker(broker_pb2_grpc.EvalBrokerServiceServicer):
    """Answers Dequeue when ``leader`` is its own address, else a NotLeader hint."""

    def __init__(self, replica: str) -> None:
        self.replica = replica
        self.address = ""
        self.leader: str | None = None
        self.calls: collections.Counter[str] = collections.Counter()

    async def Dequeue(self, request: Any, context: Any) -> Any:
        self.calls["Dequeue"] += 1
        if self.leader != self.address:
            raise errors.NotLeader("broker", self.leader)
        return broker_pb2.DequeueResponse(token=self.replica)


class FakeApp:
    def __init__(self, bindings: list[ServiceBinding]) -> None:
        self.bindings = bindings
        self.ctx: AppContext | None = None

    async def prepare(self) -> None:
        return None

    async def start(self, ctx: AppContext) -> None:
        self.ctx = ctx
        await ctx.health.set_all_ready(True)

    async def stop(self) -> None:
        return None


def settings(endpoint: str, prefix: str, service: str, replica: str, **kw: Any) -> ServeSettings:
    return ServeSettings(
        service=service, replica=replica, shutdown_grace=0.0,
        etcd=EtcdSettings(endpoints=(endpoint,), prefix=prefix, session_ttl=2), **kw,
    )


async def start_state(endpoint: str, prefix: str, replica: str, *, hang: Hang | None = None,
                      rpc_version: int = 1) -> tuple[DroverServer, FakeState]:
    fake = FakeState(replica, hang)
    app = FakeApp([ServiceBinding(STATE, fake, state_pb2_grpc.add_StateServiceServicer_to_server)])
    server = DroverServer(settings(endpoint, prefix, "state", replica, rpc_version=rpc_version),
                          app, membership=True)
    await server.start()
    return server, fake


async def start_broker(endpoint: str, prefix: str, replica: str) -> tuple[DroverServer, FakeBroker]:
    fake = FakeBroker(replica)
    app = FakeApp([ServiceBinding(BROKER, fake,
                                  broker_pb2_grpc.add_EvalBrokerServiceServicer_to_server)])
    server = DroverServer(settings(endpoint, prefix, "broker", replica), app, membership=True)
    ctx = await server.start()
    fake.address = ctx.address
    return server, fake


async def start_proxy(endpoint: str, prefix: str, replica: str,
                      **kw: Any) -> tuple[DroverServer, ProxyApp]:
    s = settings(endpoint, prefix, "proxy", replica, **kw)
    app = ProxyApp(s, ProxyConfig(ping_timeout=0.5))
    server = DroverServer(s, app, membership=True)
    await server.start()
    assert app.discovery is not None
    await asyncio.wait_for(app.discovery.first_applied.wait(), 5)
    return server, app


def channel_to(server: DroverServer) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")



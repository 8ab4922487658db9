"""All four real services, in-process, on the session etcd: what the fuzz
test drives. Each is the production app (the ``drover serve`` factories)
in a :class:`DroverServer` with membership on, so the proxy discovers the
others and the broker and watcher elect themselves leader."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
from google.protobuf.descriptor import MethodDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.config import EtcdSettings, ServeSettings
from drover.coord import Keyspace
from drover.coord.kv import prefix_end
from drover.rpc.app import load_app_factory
from drover.rpc.server import DroverServer
from drover.state.app import EtcdStore

TTL = 3

#: (the server that owns it, the generated module) for every drover API.
SERVICES = (
    ("state", state_pb2), ("state", acl_pb2), ("broker", broker_pb2),
    ("deployments", deployments_pb2), ("proxy", proxy_pb2),
)


@dataclass(frozen=True, repr=False)
class Rpc:
    owner: str
    method: MethodDescriptor

    @property
    def path(self) -> str:
        return f"/{self.method.containing_service.full_name}/{self.method.name}"

    def __repr__(self) -> str:
        return self.path


RPCS = [
    Rpc(owner, method)
    for owner, module in SERVICES
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
]


@dataclass
class FuzzCluster:
    etcd: str
    prefix: str
    servers: dict[str, DroverServer] = field(default_factory=dict)

    def address(self, service: str) -> str:
        ctx = self.servers[service].ctx
        assert ctx is not None
        return ctx.address

    async def start(self, service: str, **kw: object) -> None:
        settings = ServeSettings(
            service=service, replica=f"fuzz-{service}", shutdown_grace=0.5,
            etcd=EtcdSettings(endpoints=(self.etcd,), prefix=self.prefix, session_ttl=TTL),
            **kw,  # type: ignore[arg-type]
        )
        server = DroverServer(settings, load_app_factory(service)(settings), membership=True)
        await server.start()
        self.servers[service] = server

    async def serving(self, service: str) -> bool:
        """Health Check of every service on that server says SERVING."""
        async with grpc.aio.insecure_channel(self.address(service)) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            resp = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
            return bool(resp.status == health_pb2.HealthCheckResponse.SERVING)


class DataRevision:
    """A fingerprint of everything stored under the cluster's prefix except
    liveness keys (membership, elections, which change on their own): key
    count, highest and summed mod_revision. A put changes the highest, a
    delete the count and sum: unchanged exactly when nothing was written."""

    _LIVENESS = ("members/", "election/")

    def __init__(self, etcd: str, prefix: str) -> None:
        self._channel = grpc.aio.insecure_channel(etcd)
        self._store = EtcdStore(self._channel)
        self._base = Keyspace(prefix).base.encode()

    async def read(self) -> tuple[int, int, int]:
        page = await self._store.range(self._base, prefix_end(self._base))
        mods = [kv.mod_revision for kv in page.kvs
                if not kv.key[len(self._base):].decode(errors="replace").startswith(
                    self._LIVENESS)]
        return len(mods), max(mods, default=0), sum(mods)

    async def close(self) -> None:
        await self._channel.close()


@contextlib.asynccontextmanager
async def fuzz_cluster(etcd: str, prefix: str, *, acl: bool = False
                       ) -> AsyncIterator[FuzzCluster]:
    """``acl``: every service with access control on (callers anonymous)."""
    cluster = FuzzCluster(etcd, prefix)
    try:
        await cluster.start("state", acl=acl)
        state = (cluster.address("state"),)
        await cluster.start("broker", state_addresses=state, acl=acl)
        await cluster.start("deployments", state_addresses=state, acl=acl)
        await cluster.start("proxy", acl=acl)
        for service in cluster.servers:
            for _ in range(200):
                if await cluster.serving(service):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"{service} never became SERVING")
        yield cluster
    finally:
        for service in reversed(list(cluster.servers)):
            await cluster.servers[service].stop(0.5)

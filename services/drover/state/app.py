"""Wiring of the state service for `drover serve state`: :func:`create_app`.

The bootstrap (``drover.rpc.server``) owns the gRPC server, health and
reflection; this module builds what the state service adds
(:func:`build_state_service`): the cache (listed before the gRPC server is
built, so a replica reports SERVING only once it can answer consistently),
the servicer and its RPC groups, and the background task that keeps the
cache watching. Afterwards readiness follows a periodic consistent read
(the "cache" check: etcd reachable and the cache caught up). Shutdown:
``stop`` ends the event streams (UNAVAILABLE: clients resume elsewhere)
while the server still runs; ``close``, once the server has stopped, closes
the cache and etcd (a closed etcd client under live streams held them
~4 s: issue 41). The
page-token HMAC key is shared by all replicas through etcd (created once
with a put-if-absent txn), so any replica continues another's pages.
:func:`state_config` is the one place the service's configs are built from settings.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from drover.acl import AclKeys
from drover.api.acl.v1 import acl_pb2_grpc
from drover.config import ServeSettings, tuned_config
from drover.coord.connect import EtcdClient, connect
from drover.coord.etcd_kv import EtcdKV
from drover.coord.keys import Keyspace
from drover.coord.kv import MAX_TXN_OPS, Compare, KVStore, LeaseKV, Put
from drover.errors import DroverError
from drover.paging import CLUSTER_SECRET, PageTokenCodec
from drover.rpc.channels import channel
from drover.rpc.propagation import TokenSource
from drover.rpc.server import App, AppContext, ServiceBinding
from drover.state import metrics
from drover.state.acl.admin import AclAdmin
from drover.state.allocations.eval_token import BrokerTokenCheck, TokenCheck
from drover.state.allocations.plans import PlansRpc
from drover.state.allocations.rpcs import AllocationsRpc
from drover.state.cache import Cache
from drover.state.config import (
    BlockingConfig,
    CacheConfig,
    LivenessConfig,
    ReadConfig,
    StateConfig,
    SubscribeConfig,
    WriterConfig,
)
from drover.state.core import codec
from drover.state.deployments.rpcs import DeploymentUpdateRpc
from drover.state.evaluations.delete_by_filter import DeleteByFilter
from drover.state.evaluations.rpcs import EvaluationsRpc
from drover.state.gc import GarbageCollectRpc
from drover.state.jobs.rpcs import JobsRpc
from drover.state.nodes.drain import NodeDrainRpc
from drover.state.nodes.liveness import NodeLiveness
from drover.state.nodes.rpcs import NodesRpc
from drover.state.nodes.status import NodeStatusRpc
from drover.state.pipeline import WriteCalls, Writer
from drover.state.queries import Queries
from drover.state.reads import Reader
from drover.state.scheduler_config.rpcs import SchedulerConfigRpc
from drover.state.servicer import AclServicer, StateServicer, add_state_servicer
from drover.state.subscribe import Hub

SERVICE = "drover.state.v1.StateService"
ACL_SERVICE = "drover.acl.v1.AclService"


class EtcdStore(EtcdKV):
    """:class:`EtcdKV` measured as the state service's etcd client (its txn
    spans and metrics are ``drover.state.etcd.*``)."""

    def __init__(self, etcd: EtcdClient | grpc.aio.Channel, *, timeout: float = 10.0,
                 max_txn_ops: int = MAX_TXN_OPS, write_timeout: float | None = None) -> None:
        super().__init__(etcd, timeout=timeout, max_txn_ops=max_txn_ops,
                         telemetry="drover.state", write_timeout=write_timeout)


@dataclass
class StateService:
    """What the bootstrap wires: add each of ``bindings`` to the server, await
    ``ready`` before reporting SERVING, keep ``tasks`` running, ``close``."""

    servicer: StateServicer
    acl_admin: AclAdmin
    cache: Cache
    writer: Writer
    writes: WriteCalls
    ready: asyncio.Event
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _closers: list[Callable[[], Any]] = field(default_factory=list)

    @property
    def bindings(self) -> list[ServiceBinding]:
        """The gRPC services this replica serves, each with its add function."""
        return [
            ServiceBinding(SERVICE, self.servicer, add_state_servicer),
            ServiceBinding(ACL_SERVICE, AclServicer(self.acl_admin),
                           acl_pb2_grpc.add_AclServiceServicer_to_server),
        ]

    async def close(self) -> None:
        await self.cache.close()
        for closer in self._closers:
            res = closer()
            if asyncio.iscoroutine(res):
                await res


async def token_key(store: KVStore, keys: codec.KeyCodec) -> bytes:
    """The cluster's page-token key, created by the first replica of any service
    (the same key as :func:`drover.coord.cluster_secret` gives)."""
    key = keys.keyspace.secret(CLUSTER_SECRET).encode()
    await store.txn([Compare(key, "create", 0)], [Put(key, os.urandom(32))])
    page = await store.range(key, b"")
    return page.kvs[0].value


async def build_on_store(
    store: LeaseKV, keyspace: Keyspace, config: StateConfig | None = None, *,
    token_check: TokenCheck | None = None,
) -> StateService:
    """The state service on any :class:`KVStore` (tests, benchmarks), with
    ``config`` (None: :func:`default_state_config`). ``token_check``: how
    SubmitPlan checks a plan's delivery (None: it does not -- no broker
    runs; the served service always passes one)."""
    config = config or default_state_config()
    keys = codec.KeyCodec(keyspace)
    cache = Cache(store, keys, config.cache)
    await cache.start()
    reader = Reader(cache, PageTokenCodec(await token_key(cache.store, keys)),
                    config=config.read, blocking=config.blocking)
    writer = Writer(cache.store, keys, cache, config.writer)
    writes = WriteCalls(cache, writer, keys)
    servicer = StateServicer(
        queries=Queries(cache, reader),
        jobs=JobsRpc(cache, keys, writes),
        evaluations=EvaluationsRpc(writes, DeleteByFilter(cache, reader, writer, keys)),
        allocations=AllocationsRpc(writes), nodes=NodesRpc(writes),
        scheduler_config=SchedulerConfigRpc(writes),
        deployment_updates=DeploymentUpdateRpc(writes),
        gc=GarbageCollectRpc(cache, keys, writes),
        node_status=NodeStatusRpc(writes, NodeLiveness(writes, store, config.liveness)),
        plans=PlansRpc(writes, token_check),
        hub=Hub(cache, config.subscribe),
        node_drain=NodeDrainRpc(writes),
    )
    tasks = [cache._task] if cache._task is not None else []
    admin = AclAdmin(writer, AclKeys(keyspace.base), writes.now)
    service = StateService(servicer, admin, cache, writer, writes, cache.ready, tasks)
    if token_check is not None:
        service._closers.append(token_check.close)
    return service


def state_config(settings: ServeSettings) -> StateConfig:
    """The service's configs with the tunables ``settings`` carries (the
    parts no tunable sets keep their defaults)."""
    return StateConfig(
        cache=tuned_config(CacheConfig, settings, stop_timeout=settings.stop_timeout),
        subscribe=tuned_config(SubscribeConfig, settings),
        writer=tuned_config(WriterConfig, settings),
        liveness=tuned_config(LivenessConfig, settings),
        read=ReadConfig(), blocking=BlockingConfig())


def default_state_config() -> StateConfig:
    """The service's configs as a replica served with no tunables set has them."""
    return state_config(ServeSettings(service="state"))


async def build_state_service(settings: ServeSettings,
                              token: TokenSource = lambda: "") -> StateService:
    """Connect to etcd (a "bulk" client: the cache's watch streams the whole
    keyspace), list the cache, and return the service ready to register.
    SubmitPlan asks the broker leader about each plan's delivery, over the
    server's TLS with ``token`` (the server identity, with ACLs on)."""
    config = state_config(settings)
    client = await connect(settings.etcd, purpose="bulk")
    store = EtcdStore(client, max_txn_ops=config.writer.max_txn_ops,
                      write_timeout=config.writer.etcd_write_timeout)
    keyspace = Keyspace(settings.etcd.prefix)
    token_check = BrokerTokenCheck(
        store, keyspace, lambda address: channel(address, tls=settings.tls, token=token))
    service = await build_on_store(store, keyspace, config, token_check=token_check)
    service._closers += [store.close, client.close]  # the shared keepalive stream first
    return service


class StateApp:
    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self._service: StateService | None = None
        self._unregister: list[Callable[[], None]] = []
        self._token = ""  # the server identity, with ACLs on (set_server_token)

    def set_server_token(self, secret: str) -> None:
        self._token = secret

    async def prepare(self) -> None:
        self._service = await build_state_service(self.settings, lambda: self._token)

    @property
    def bindings(self) -> list[ServiceBinding]:
        assert self._service is not None, "prepare() first"
        return self._service.bindings

    async def start(self, ctx: AppContext) -> None:
        assert self._service is not None
        self._unregister = metrics.register(self._service.cache)
        await self._service.ready.wait()
        ctx.health.add_check("cache", self._cache_caught_up)
        await ctx.health.set_ready(SERVICE)
        await ctx.health.set_ready(ACL_SERVICE)

    async def _cache_caught_up(self) -> str | None:
        """Ready only while a consistent read would succeed: the cache reaches
        etcd's last object write (one marker read, then the cache's own wait)."""
        assert self._service is not None
        try:
            await self._service.cache.sync()
        except DroverError as e:
            return f"the cache is not caught up with etcd: {e}"
        return None

    async def stop(self) -> None:
        """Before the server stops (health already NOT_SERVING): end the
        event streams with UNAVAILABLE ``REPLICA_STOPPING``, so their clients
        resume on another replica at once; etcd stays open for the calls
        still in flight (:meth:`close`, after the server stopped)."""
        for close in self._unregister:
            close()
        if self._service is not None:
            self._service.servicer.hub.close()

    async def close(self) -> None:
        """After the server stopped: the cache's watch, then the etcd clients."""
        if self._service is not None:
            await self._service.close()


def create_app(settings: ServeSettings) -> App:
    return StateApp(settings)

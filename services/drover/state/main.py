"""Wiring for the server bootstrap: :func:`build_state_service`.

The bootstrap (``drover.rpc.server``) owns the gRPC server, health and
reflection; this module builds what the state service adds: the cache (listed
before the function returns, so a replica is ready only when it can answer),
the servicer, and the background task that keeps the cache watching.
The page-token HMAC key is shared by all replicas through etcd (created once
with a put-if-absent txn), so any replica continues another's pages.
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
from drover.config import ServeSettings
from drover.coord.keys import Keyspace
from drover.paging import CLUSTER_SECRET, PageTokenCodec
from drover.state.acl_admin import AclAdmin
from drover.state.cache import Cache, CacheConfig
from drover.state.core import codec
from drover.state.deployment_update import DeploymentUpdateRpc
from drover.state.eval_delete import DeleteByFilter
from drover.state.eval_update import EvaluationUpdateRpc
from drover.state.evaluations import EvaluationsRpc
from drover.state.gc import GarbageCollectRpc
from drover.state.jobs import JobsRpc
from drover.state.node_status import NodeStatusRpc
from drover.state.objects import ObjectsRpc
from drover.state.plans import PlansRpc
from drover.state.queries import QueriesRpc
from drover.state.reads import Reader
from drover.state.servicer import StateServicer, add_state_servicer
from drover.state.store import Compare, EtcdStore, KVStore, Put
from drover.state.subscribe import Hub, SubscribeConfig
from drover.state.write_calls import WriteCalls
from drover.state.writes import Writer, WriterConfig


@dataclass
class StateService:
    """What the bootstrap wires: add ``register`` to the server, await
    ``ready`` before reporting SERVING, keep ``tasks`` running, ``close``."""

    servicer: StateServicer
    cache: Cache
    writer: Writer
    writes: WriteCalls
    ready: asyncio.Event
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    acl_admin: AclAdmin | None = None
    _closers: list[Callable[[], Any]] = field(default_factory=list)

    def register(self, server: grpc.aio.Server) -> None:
        add_state_servicer(self.servicer, server)
        if self.acl_admin is not None:
            acl_pb2_grpc.add_AclServiceServicer_to_server(self.acl_admin, server)

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
    store: KVStore, keyspace: Keyspace, *, cache_config: CacheConfig | None = None,
    subscribe_config: SubscribeConfig | None = None, writer_config: WriterConfig | None = None,
) -> StateService:
    """The state service on any :class:`KVStore` (tests, benchmarks)."""
    keys = codec.KeyCodec(keyspace)
    writer_config = writer_config or WriterConfig()
    cache = Cache(store, keys, cache_config or CacheConfig())
    await cache.start()
    reader = Reader(cache, PageTokenCodec(await token_key(cache.store, keys)))
    writer = Writer(cache.store, keys, cache, writer_config)
    writes = WriteCalls(cache, writer, keys)
    servicer = StateServicer(
        queries=QueriesRpc(cache, reader),
        jobs=JobsRpc(cache, keys, writes),
        evaluations=EvaluationsRpc(writes, DeleteByFilter(cache, reader, writer, keys)),
        evaluation_updates=EvaluationUpdateRpc(writes),
        objects=ObjectsRpc(writes),
        deployment_updates=DeploymentUpdateRpc(writes),
        gc=GarbageCollectRpc(cache, keys, writes),
        node_status=NodeStatusRpc(writes),
        plans=PlansRpc(writes),
        hub=Hub(cache, subscribe_config or SubscribeConfig()),
    )
    tasks = [cache._task] if cache._task is not None else []
    admin = AclAdmin(writer, AclKeys(keyspace.base), writes.now)
    return StateService(servicer, cache, writer, writes, cache.ready, tasks, admin)


def configs(settings: ServeSettings) -> tuple[CacheConfig, SubscribeConfig, WriterConfig]:
    """The cache, Subscribe and writer configs with the tunables ``settings`` carries."""
    t = settings.tuned("state")
    cache = CacheConfig(
        page_size=int(t.get("cache_page_size", CacheConfig.page_size)),
        sync_timeout=t.get("sync_timeout", CacheConfig.sync_timeout),
        stop_timeout=settings.stop_timeout,
    )
    subscribe = SubscribeConfig(
        buffer_revisions=int(t.get("subscribe_buffer", SubscribeConfig.buffer_revisions)),
        replay_events=int(t.get("subscribe_replay_events", SubscribeConfig.replay_events)),
        heartbeat=t.get("subscribe_heartbeat", SubscribeConfig.heartbeat),
    )
    writer = WriterConfig(
        max_txn_ops=int(t.get("max_txn_ops", WriterConfig.max_txn_ops)),
        delete_txns_in_flight=int(t.get("delete_txns_in_flight",
                                        WriterConfig.delete_txns_in_flight)),
    )
    return cache, subscribe, writer


async def build_state_service(settings: ServeSettings) -> StateService:
    """Connect to etcd (a "bulk" client: the cache's watch streams the whole
    keyspace), list the cache, and return the service ready to register."""
    from drover.coord.connect import connect

    cache_config, subscribe_config, writer_config = configs(settings)
    client = await connect(settings.etcd, purpose="bulk")
    store = EtcdStore(client, max_txn_ops=writer_config.max_txn_ops)
    service = await build_on_store(store, Keyspace(settings.etcd.prefix),
                                   cache_config=cache_config, subscribe_config=subscribe_config,
                                   writer_config=writer_config)
    service._closers.append(client.close)
    return service

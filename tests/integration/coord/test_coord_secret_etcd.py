"""Cluster secrets against a real etcd: first use creates, everyone agrees."""

from __future__ import annotations

import asyncio

from drover.config import EtcdSettings
from drover.coord import Keyspace, cluster_secret, connect
from drover.coord.etcd_kv import EtcdKV
from drover.state.app import EtcdStore, token_key
from drover.state.core import codec


async def test_concurrent_first_callers_agree_and_it_never_changes(
        etcd_endpoint: str, keyspace: Keyspace) -> None:
    clients = [await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="control")
               for _ in range(4)]
    try:
        first = await asyncio.gather(*(cluster_secret(EtcdKV(c), keyspace, "page-token")
                                       for c in clients for _ in range(3)))
        assert len(set(first)) == 1 and len(first[0]) == 32
        assert await cluster_secret(EtcdKV(clients[0]), keyspace, "page-token") == first[0]
        other = await cluster_secret(EtcdKV(clients[0]), keyspace, "other")
        assert other != first[0]
        elsewhere = await cluster_secret(EtcdKV(clients[0]), Keyspace(keyspace.root + "x"),
                                         "page-token")
        assert elsewhere != first[0]
        # The state service signs with the very same key.
        store = EtcdStore(clients[0].channel)
        assert await token_key(store, codec.KeyCodec(keyspace)) == first[0]
    finally:
        for c in clients:
            await c.close()

"""Hostname endpoints are re-resolved: a member that moves to another
address (a rescheduled pod behind a headless Service) is followed."""

from __future__ import annotations

import asyncio
import importlib

import pytest

from drover.coord.connect import EtcdClient
from drover.coord.etcd_kv import EtcdKV
from drover.coord.kv import Put

# drover.coord re-exports the function connect(), shadowing the module.
connect_mod = importlib.import_module("drover.coord.connect")


async def test_client_follows_re_resolved_addresses(
        etcd_endpoint: str, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    host, port = etcd_endpoint.rsplit(":", 1)
    answers = [[(f"etcd.test@{host}:{port}", f"ipv4:{host}:{port}", "etcd.test")]]
    calls = 0

    async def fake_resolve(endpoints: tuple[str, ...]) -> list[tuple[str, str, str]]:
        nonlocal calls
        calls += 1
        return answers[-1]

    monkeypatch.setattr(connect_mod, "resolve_endpoints", fake_resolve)
    client = EtcdClient((f"etcd.test:{port}",), creds=None, purpose="control",
                        dns_refresh=0.05)
    await client.connect()
    try:
        assert client.pool is not None
        assert list(client.pool.endpoints) == [f"etcd.test@{host}:{port}"]
        # The name now resolves to another address (here: the same etcd under
        # another endpoint name, so the test needs no second machine).
        moved = f"etcd.test@localhost-{port}"
        answers.append([(moved, f"ipv4:{host}:{port}", "etcd.test")])
        pool = client.pool
        async with asyncio.timeout(10):
            for _ in iter(lambda: list(pool.endpoints) == [moved], True):
                await asyncio.sleep(0.05)
        assert client.pool.current.name == moved
        key = f"{etcd_prefix}/dns".encode()
        kv = EtcdKV(client)
        await kv.txn([], [Put(key, b"v")])
        assert (await kv.range(key, b"")).kvs[0].value == b"v"
        assert calls >= 2
    finally:
        await client.close()

"""The harness starts a real etcd that aetcd can talk to."""

from __future__ import annotations

import aetcd


async def test_real_etcd_round_trip(etcd_endpoint: str, etcd_prefix: str) -> None:
    host, port = etcd_endpoint.rsplit(":", 1)
    async with aetcd.Client(host=host, port=int(port)) as client:
        key = f"{etcd_prefix}/probe".encode()
        await client.put(key, b"v1")
        got = await client.get(key)
        assert got is not None and got.value == b"v1"
        status = await client.status()
        assert status.version.startswith("3.")

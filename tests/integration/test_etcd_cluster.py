"""The three-member fixture is a real cluster: one leader, faults on one
member leave a quorum that elects again, a killed member rejoins."""

from __future__ import annotations

import aetcd
import pytest

from drover.dev.etcd import EtcdCluster

pytestmark = pytest.mark.slow


async def _put_get(endpoint: str, key: bytes, value: bytes) -> bytes | None:
    host, port = endpoint.rsplit(":", 1)
    async with aetcd.Client(host=host, port=int(port), timeout=10) as client:
        await client.put(key, value)
        got = await client.get(key)
        return None if got is None else got.value


async def test_kill_leader_elects_another_and_restart_rejoins(
        etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    c = etcd_cluster3
    old = c.leader()
    assert sum(m.is_leader() for m in c.members) == 1
    c.kill(old)
    new = c.leader()
    assert new != old
    other = next(i for i in range(3) if i not in (old, new))
    key = f"{etcd_prefix}/k".encode()
    assert await _put_get(c.endpoints[other], key, b"v1") == b"v1"
    c.restart(old)
    # The restarted member caught up with the write made while it was down.
    assert await _put_get(c.endpoints[old], key + b"2", b"v2") == b"v2"
    host, port = c.endpoints[old].rsplit(":", 1)
    async with aetcd.Client(host=host, port=int(port), timeout=10) as client:
        got = await client.get(key)
        assert got is not None and got.value == b"v1"


async def test_paused_leader_is_replaced(etcd_cluster3: EtcdCluster, etcd_prefix: str) -> None:
    c = etcd_cluster3
    old = c.leader()
    c.pause(old)
    try:
        new = c.leader()
        assert new != old
        assert await _put_get(c.endpoints[new], f"{etcd_prefix}/p".encode(), b"x") == b"x"
    finally:
        c.resume(old)

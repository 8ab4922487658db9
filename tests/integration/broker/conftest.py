"""Fixtures of the broker integration tests (helpers live in broker_cluster)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from broker_cluster import Cluster, start_cluster, stop_cluster

from drover.broker.config import BrokerConfig, ShellConfig


@pytest.fixture
def broker_config() -> BrokerConfig:
    return BrokerConfig(nack_timeout=5.0, initial_nack_delay=0.0)


@pytest.fixture
def shell_config() -> ShellConfig:
    """The brokers' shell config; a test parametrizes it to change a bound.

    On resign, open polls wait ``hint_wait`` for the next leader: short, so a
    test that revokes with no next leader coming does not sit through it."""
    return ShellConfig(hint_wait=1.5)


@pytest.fixture
async def cluster(etcd_endpoint: str, etcd_prefix: str, broker_config: BrokerConfig,
                  shell_config: ShellConfig) -> AsyncIterator[Cluster]:
    c = await start_cluster(etcd_endpoint, etcd_prefix, broker_config, shell=shell_config)
    try:
        yield c
    finally:
        await stop_cluster(c)

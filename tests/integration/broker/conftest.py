"""Fixtures of the broker integration tests (helpers live in broker_cluster)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from broker_cluster import Cluster, start_cluster, stop_cluster

from drover.broker.config import BrokerConfig


@pytest.fixture
def broker_config() -> BrokerConfig:
    return BrokerConfig(nack_timeout=5.0, initial_nack_delay=0.0)


@pytest.fixture
async def cluster(etcd_endpoint: str, etcd_prefix: str, broker_config: BrokerConfig
                  ) -> AsyncIterator[Cluster]:
    c = await start_cluster(etcd_endpoint, etcd_prefix, broker_config)
    try:
        yield c
    finally:
        await stop_cluster(c)

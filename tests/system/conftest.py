"""System-test fixtures: drover services as real subprocesses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from service_procs import serve


@pytest.fixture
def state_address(etcd_endpoint: str, etcd_prefix: str) -> Iterator[str]:
    """`drover serve state` with this test's key prefix."""
    with serve("state", etcd_endpoint, etcd_prefix) as address:
        yield address


@pytest.fixture
def broker_address(etcd_endpoint: str, etcd_prefix: str, state_address: str) -> Iterator[str]:
    """`drover serve broker`, following ``state_address``."""
    with serve("broker", etcd_endpoint, etcd_prefix, "--state-address", state_address) as address:
        yield address

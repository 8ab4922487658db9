"""System-test fixtures: drover services as real subprocesses."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from drover.dev.ports import free_port, wait_for_port


@contextlib.contextmanager
def serve(service: str, etcd: str, prefix: str, *extra: str) -> Iterator[str]:
    """`drover serve <service>` on a free port; its address."""
    port = free_port()
    proc = subprocess.Popen([
        sys.executable, "-m", "drover.cli.main", "serve", service, "--etcd", etcd,
        "--etcd-prefix", prefix, "--listen", f"127.0.0.1:{port}", "--session-ttl", "3",
        "--log-level", "WARNING", *extra,
    ])
    try:
        assert wait_for_port("127.0.0.1", port, 30), f"{service} did not start"
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


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

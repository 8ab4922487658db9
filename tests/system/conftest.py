"""System-test fixtures: drover services as real subprocesses."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from drover.dev.ports import free_port, wait_for_port


@pytest.fixture
def state_address(etcd_endpoint: str, etcd_prefix: str) -> Iterator[str]:
    """`drover serve state` on a free port, with this test's key prefix."""
    port = free_port()
    proc = subprocess.Popen([
        sys.executable, "-m", "drover.cli.main", "serve", "state", "--etcd", etcd_endpoint,
        "--etcd-prefix", etcd_prefix, "--listen", f"127.0.0.1:{port}", "--session-ttl", "3",
        "--log-level", "WARNING",
    ])
    try:
        assert wait_for_port("127.0.0.1", port, 30), "state service did not start"
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def broker_address(etcd_endpoint: str, etcd_prefix: str, state_address: str) -> Iterator[str]:
    """`drover serve broker` on a free port, following ``state_address``."""
    port = free_port()
    proc = subprocess.Popen([
        sys.executable, "-m", "drover.cli.main", "serve", "broker", "--etcd", etcd_endpoint,
        "--etcd-prefix", etcd_prefix, "--listen", f"127.0.0.1:{port}", "--session-ttl", "3",
        "--state-address", state_address, "--log-level", "WARNING",
    ])
    try:
        assert wait_for_port("127.0.0.1", port, 30), "broker did not start"
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)

"""Liveness and readiness of real `drover serve` processes when etcd freezes.

etcd (a private one: SIGSTOP would stop every other test) is frozen under a
state and a broker process. Readiness, watched with grpc.health.v1
Health/Watch, turns NOT_SERVING (etcd unreachable, the cache cannot catch
up, no leader can be read) while liveness keeps answering SERVING (the
processes work; restarting them would not help), and readiness comes back
once etcd is woken.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drover.dev.etcd import EtcdServer
from drover.rpc.health import LIVENESS

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy_faults import serve

pytestmark = pytest.mark.slow

S = health_pb2.HealthCheckResponse
BOUND = 40.0  # seconds; every wait below ends long before in practice


@pytest.fixture
def frozen_etcd() -> Iterator[EtcdServer]:
    server = EtcdServer(name="health-readiness").start()
    try:
        yield server
    finally:
        os.kill(server.pid, signal.SIGCONT)
        server.stop()


def watch_until(address: str, service: str, want: int) -> list[int]:
    """Health/Watch ``service`` until it reports ``want``; every status seen."""
    seen: list[int] = []
    with grpc.insecure_channel(address) as ch:
        call = health_pb2_grpc.HealthStub(ch).Watch(
            health_pb2.HealthCheckRequest(service=service), timeout=BOUND)
        for resp in call:
            seen.append(resp.status)
            if resp.status == want:
                call.cancel()
                return seen
    raise AssertionError(f"{address} {service!r}: the watch ended after {seen}")


def liveness(address: str) -> int:
    with grpc.insecure_channel(address) as ch:
        return int(health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=LIVENESS), timeout=5).status)


def test_readiness_follows_etcd_while_liveness_stays(frozen_etcd: EtcdServer) -> None:
    endpoint, prefix = frozen_etcd.endpoint, "/health/drover"
    with serve("state", endpoint, prefix) as state, \
            serve("broker", endpoint, prefix, "--state-address", state.address) as broker:
        services = {state.address: "drover.state.v1.StateService",
                    broker.address: "drover.broker.v1.EvalBrokerService"}
        for address, name in services.items():
            assert watch_until(address, "", S.SERVING)[-1] == S.SERVING
            assert watch_until(address, name, S.SERVING)[-1] == S.SERVING
        os.kill(frozen_etcd.pid, signal.SIGSTOP)
        for address, name in services.items():
            assert watch_until(address, name, S.NOT_SERVING)[-1] == S.NOT_SERVING
            assert watch_until(address, "", S.NOT_SERVING)[-1] == S.NOT_SERVING
            assert liveness(address) == S.SERVING
        os.kill(frozen_etcd.pid, signal.SIGCONT)
        for address, name in services.items():
            assert watch_until(address, name, S.SERVING)[-1] == S.SERVING
            assert liveness(address) == S.SERVING

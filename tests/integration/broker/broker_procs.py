"""`drover serve` processes (state, brokers) on loopback for fault tests.

Real processes, so SIGSTOP/SIGCONT and kill -9 act on a whole server: its
event loop, its keepalives and its sockets (which stay open while frozen:
calls to it queue in the kernel, as with a GC pause or a stalled VM).
Each process logs to a file under the test's tmp_path (named in failures).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc

TTL = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    def __init__(self, service: str, etcd: str, prefix: str, logs: Path, name: str,
                 *extra: str) -> None:
        self.name = name
        self.address = f"127.0.0.1:{free_port()}"
        self.log = logs / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "drover.cli.main", "serve", service, "--etcd", etcd,
                 "--etcd-prefix", prefix, "--listen", self.address, "--session-ttl", str(TTL),
                 "--replica", name, "--shutdown-grace", "1", *extra],
                stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
        self.channel = grpc.aio.insecure_channel(self.address)

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    async def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        await asyncio.to_thread(self.proc.wait, 10)
        await self.channel.close()


class BrokerProc(Proc):
    @property
    def stub(self) -> broker_pb2_grpc.EvalBrokerServiceStub:
        return broker_pb2_grpc.EvalBrokerServiceStub(self.channel)

    async def enabled(self) -> bool:
        try:
            resp = await self.stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(),
                                                  timeout=1.0)
        except grpc.aio.AioRpcError:
            return False
        return bool(resp.stats.enabled)


async def start_state(etcd: str, prefix: str, logs: Path, name: str = "state"
                      ) -> tuple[Proc, state_pb2_grpc.StateServiceStub]:
    state = Proc("state", etcd, prefix, logs, name)
    stub = state_pb2_grpc.StateServiceStub(state.channel)
    for _ in range(300):
        try:
            await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(page_size=1), timeout=1)
            return state, stub
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"state did not come up (see {state.log})")


async def leader_among(brokers: list[BrokerProc], within: float = 30.0) -> BrokerProc:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        for b in brokers:
            if await b.enabled():
                return b
        await asyncio.sleep(0.05)
    raise AssertionError(f"no broker leader (logs: {[str(b.log) for b in brokers]})")

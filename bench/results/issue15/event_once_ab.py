"""A/B helper used for issue 15 (event-once): the batched broker path only.

Starts etcd, one state service and two brokers like ``bench/broker_bench.py``,
warms up, then runs ``REPS`` rounds of ``N`` evaluations through enqueue ->
Dequeue(128) -> AckBatch with 4 workers and prints the rate of each round and
the CPU per evaluation of the state process, the broker leader and etcd over
all rounds (from /proc, so at tick resolution). Run it alternately with two
interpreters (main's venv, a branch's venv) to compare under the same load:
``REPS=3 <venv>/bin/python bench/results/issue15/event_once_ab.py``.
``SPY=1`` also records py-spy profiles (raw) of the state and leader into
``$OUT`` (default /tmp).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import broker_bench as bb

from drover.api.broker.v1 import broker_pb2_grpc
from drover.api.state.v1 import state_pb2_grpc
from drover.dev.etcd import EtcdServer
from drover.dev.ports import free_port, wait_for_port


def _spies(pids: dict[str, int]) -> list[subprocess.Popen[bytes]]:
    """py-spy recorders of ``pids`` when ``SPY`` is set (raw stacks into ``$OUT``)."""
    if not os.environ.get("SPY"):
        return []
    out = os.environ.get("OUT", "/tmp")
    spy = str(Path(sys.executable).with_name("py-spy"))
    return [subprocess.Popen(
        [spy, "record", "-p", str(pid), "-o", f"{out}/{name}.txt", "-f", "raw", "-r", "1000",
         "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name, pid in pids.items()]


async def main() -> None:
    etcd = EtcdServer().start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        prefix = f"/bench{uuid.uuid4().hex[:8]}/drover"
        sport, b1, b2 = free_port(), free_port(), free_port()
        procs.append(bb.spawn("state", etcd.endpoint, prefix, sport))
        assert wait_for_port("127.0.0.1", sport, 60)
        for port in (b1, b2):
            procs.append(bb.spawn("broker", etcd.endpoint, prefix, port,
                                  "--state-address", f"127.0.0.1:{sport}"))
        for port in (b1, b2):
            assert wait_for_port("127.0.0.1", port, 60)
        state = state_pb2_grpc.StateServiceStub(
            grpc.aio.insecure_channel(f"127.0.0.1:{sport}"))
        stubs = {f"127.0.0.1:{p}": broker_pb2_grpc.EvalBrokerServiceStub(
            grpc.aio.insecure_channel(f"127.0.0.1:{p}")) for p in (b1, b2)}
        address = await bb.leader_of(stubs)
        leader = stubs[address]
        leader_pid = procs[1].pid if address.endswith(f":{b1}") else procs[2].pid
        await bb.throughput(state, leader, 4, 1000, 128)  # warm up
        spies = _spies({"state": procs[0].pid, "broker": leader_pid})
        if spies:
            await asyncio.sleep(1.5)
        pids = {"state": procs[0].pid, "leader": leader_pid, "etcd": etcd.pid}
        before = {k: bb.cpu_seconds(p) for k, p in pids.items()}
        n, total = int(os.environ.get("N", "3000")), 0
        t0 = time.perf_counter()
        for _ in range(int(os.environ.get("REPS", "3"))):
            print("rate", round(await bb.throughput(state, leader, 4, n, 128)))
            total += n
        took = time.perf_counter() - t0
        for k, p in pids.items():
            used = bb.cpu_seconds(p) - before[k]
            print(k, "cpu ms/eval", round(1000 * used / total, 4), "pct",
                  round(100 * used / took))
        for s in spies:
            s.send_signal(2)
        for s in spies:
            s.wait(30)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(15)
        etcd.stop()


if __name__ == "__main__":
    asyncio.run(main())

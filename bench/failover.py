"""Failover time of drover.coord leadership, graceful and kill -9.

Starts its own etcd (drover.dev.etcd.EtcdServer) and three candidate
processes; each round stops the leader (SIGTERM: graceful resign, or
SIGKILL) and times until a follower has established leadership (as reported
on its stdout), then starts a replacement candidate. Prints median and max
per mode, plus an etcd baseline row (raw put latency) in the same table.

    .venv/bin/python bench/failover.py [--rounds 20] [--ttl 2]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "libs"))

from _failover_procs import Candidate

from drover.config import EtcdSettings
from drover.coord import connect
from drover.dev.etcd import EtcdServer


def wait_leader(cands: list[Candidate], timeout: float) -> Candidate:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leaders = [c for c in cands if c.proc.poll() is None and c.leading]
        if leaders:
            return leaders[0]
        time.sleep(0.002)
    raise RuntimeError("no leader")


def run_mode(endpoint: str, sig: int, rounds: int, ttl: int) -> list[float]:
    prefix = f"/bench{sig}/drover"
    cands = [Candidate(endpoint, prefix, f"c{i}", ttl) for i in range(3)]
    times: list[float] = []
    try:
        for c in cands:
            c.ready.wait(15)
        for r in range(rounds):
            leader = wait_leader(cands, 3 * ttl + 5)
            others = [c for c in cands if c is not leader and c.proc.poll() is None]
            for c in others:
                c.ready.wait(15)
            t0 = time.monotonic()
            leader.proc.send_signal(sig)
            nxt = wait_leader(others, 3 * ttl + 5)
            assert nxt.established_at is not None
            times.append(nxt.established_at - t0)
            leader.proc.wait(10)
            cands = [*others, Candidate(endpoint, prefix, f"r{r}", ttl)]
    finally:
        for c in cands:
            c.stop()
    return times


async def put_latency(endpoint: str, n: int) -> list[float]:
    client = await connect(EtcdSettings(endpoints=(endpoint,)), purpose="bench")
    out = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            await client.put(f"/bench/put/{i % 10}".encode(), b"x" * 64)
            out.append(time.perf_counter() - t0)
    finally:
        await client.close()
    return out


def row(name: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"| {name:<28} | {len(ms):>5} | {statistics.median(ms):>10.1f} | {max(ms):>10.1f} |"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--ttl", type=int, default=2)
    p.add_argument("--puts", type=int, default=500)
    args = p.parse_args()
    with EtcdServer(name="bench-failover") as server:
        puts = asyncio.run(put_latency(server.endpoint, args.puts))
        graceful = run_mode(server.endpoint, signal.SIGTERM, args.rounds, args.ttl)
        killed = run_mode(server.endpoint, signal.SIGKILL, args.rounds, args.ttl)
    print(f"failover over {args.rounds} rounds, session TTL {args.ttl}s, 3 candidates")
    print(f"| {'what':<28} | {'n':>5} | {'median ms':>10} | {'max ms':>10} |")
    print(f"|{'-' * 30}|{'-' * 7}|{'-' * 12}|{'-' * 12}|")
    print(row("etcd baseline: put", puts))
    print(row("failover: graceful resign", graceful))
    print(row(f"failover: kill -9 (TTL {args.ttl}s)", killed))
    return 0


if __name__ == "__main__":
    sys.exit(main())

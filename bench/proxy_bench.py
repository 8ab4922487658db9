"""Client proxy benchmark: forwarding overhead and convergence latency.

    .venv/bin/python bench/proxy_bench.py
    .venv/bin/python bench/proxy_bench.py --calls 5000 --rounds 100

Starts a throwaway etcd (or uses ``--etcd host:port``), one state backend
(a fake StateService answering GetJob from memory) and three proxy replicas,
all in this process on real grpc.aio servers, then prints one table:

* unary GetJob latency direct to the backend vs through a proxy, measured in
  the same run (p50/p99);
* convergence latency over ``--rounds`` membership changes (a backend
  replica registering or leaving, alternately): from the start of the change
  until WaitForConvergence on one replica reports all three proxies at the
  change's revision (p50/p99; goal p99 <= 200 ms).

``--faults N`` also runs, N times, the frozen-replica scenario of
tests/system/proxy_faults.py with real processes (two ``drover serve
state`` behind ``drover serve proxy --hold-timeout HOLD``; the replica the
proxy uses gets SIGSTOP): the proxy's time to answer a read (answered by the
other replica) and a write (UNAVAILABLE ``OUTCOME_UNKNOWN``) whose caller
gave a 60 s deadline, and the Subscribe resume gap (a write committed on
the other replica -> its event through the proxy stream).
``--only-faults`` skips the in-process measurements; ``--json`` prints one
JSON object instead of the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "proxy"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "system"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from polling import eventually
from proxy_faults import Outcome, cluster, freeze_the_used_replica
from proxy_harness import channel_to, start_proxy, start_state

from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.config import EtcdSettings
from drover.coord import Keyspace, Member, Registration, connect, list_members
from drover.coord.etcd_kv import EtcdKV
from drover.dev.etcd import EtcdServer

PREFIX = "/bench/drover"
GOAL_CONVERGENCE_P99_MS = 200.0


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


async def unary_latency(stub: Any, calls: int) -> list[float]:
    request = state_pb2.GetJobRequest(namespace="default", id="bench")
    for _ in range(min(100, calls)):  # warm the channels
        await stub.GetJob(request, timeout=5)
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await stub.GetJob(request, timeout=5)
        out.append(time.perf_counter() - t0)
    return out


async def convergence_latency(endpoint: str, stub: Any, rounds: int) -> list[float]:
    etcd = await connect(EtcdSettings(endpoints=(endpoint,), prefix=PREFIX), purpose="control")
    keyspace = Keyspace(PREFIX)
    out: list[float] = []
    live: Registration | None = None
    try:
        for i in range(rounds):
            t0 = time.perf_counter()
            if live is None:
                live = Registration(
                    EtcdKV(etcd), keyspace,
                    Member("state", f"bench-{i}", f"127.0.0.1:{20000 + i}", 1,
                           started_at=time.time()),
                    ttl=5,
                )
                live.start()
                await live.registered.wait()
            else:
                await live.close()
                live = None
            revision = (await list_members(EtcdKV(etcd), keyspace, "state")).revision
            request = proxy_pb2.WaitForConvergenceRequest(revision=revision)
            request.timeout.FromSeconds(5)
            resp = await stub.WaitForConvergence(request, timeout=6)
            out.append(time.perf_counter() - t0)
            if not resp.converged:
                raise RuntimeError(f"round {i}: not converged: {resp}")
            await asyncio.sleep(0.05)
    finally:
        if live is not None:
            await live.close()
        await etcd.close()
    return out


Row = tuple[str, list[float], str]


async def forwarding(endpoint: str, calls: int, rounds: int) -> list[Row]:
    backend, _ = await start_state(endpoint, PREFIX, "s1")
    proxies = [await start_proxy(endpoint, PREFIX, f"p{i}") for i in (1, 2, 3)]
    p1 = proxies[0][0]
    channels = [channel_to(backend), channel_to(p1)]
    try:
        await eventually(lambda: all(a.lists.get("state").servers for _, a in proxies))
        direct = await unary_latency(state_pb2_grpc.StateServiceStub(channels[0]), calls)
        via = await unary_latency(state_pb2_grpc.StateServiceStub(channels[1]), calls)
        converge = await convergence_latency(
            endpoint, proxy_pb2_grpc.ClientProxyServiceStub(channels[1]), rounds
        )
    finally:
        for ch in channels:
            await ch.close()
        for server, _ in reversed(proxies):
            await server.stop(0)
        await backend.stop(0)
    return [
        (f"unary GetJob direct ({calls} calls)", direct, ""),
        (f"unary GetJob via proxy ({calls} calls)", via,
         f"+{pct(via, 0.5) - pct(direct, 0.5):.2f} ms p50"),
        (f"convergence, 3 proxies ({rounds} rounds)", converge,
         "goal p99 <= 200 ms: "
         + ("met" if pct(converge, 0.99) <= GOAL_CONVERGENCE_P99_MS else "MISSED")),
    ]


def faults(endpoint: str, runs: int, hold: float) -> tuple[list[Row], list[Outcome]]:
    outcomes: list[Outcome] = []
    for i in range(runs):
        with cluster(endpoint, f"/bench-faults-{time.time_ns()}/drover", hold) as c:
            outcomes.append(asyncio.run(freeze_the_used_replica(c, tag=f"r{i}-")))
    ok = [o for o in outcomes if o.read_code == "OK"]
    unknown = [o for o in outcomes if (o.write_code, o.write_reason)
               == ("UNAVAILABLE", "OUTCOME_UNKNOWN")]
    exact = [o for o in outcomes if o.proxied == o.direct and not o.stream_error]
    rows: list[Row] = [
        (f"read, used replica stopped ({runs} runs)", [o.read_seconds for o in outcomes],
         f"hold {hold:g} s, deadline 60 s; {len(ok)}/{runs} answered OK"),
        (f"write, used replica stopped ({runs} runs)", [o.write_seconds for o in outcomes],
         f"{len(unknown)}/{runs} UNAVAILABLE OUTCOME_UNKNOWN"),
        (f"Subscribe resume gap ({runs} runs)", [o.resume_gap_seconds for o in outcomes],
         f"{len(exact)}/{runs} streams exact (no gap, no duplicate)"),
    ]
    return rows, outcomes


def report(rows: list[Row], outcomes: list[Outcome], as_json: bool) -> None:
    if as_json:
        out: dict[str, object] = {
            name: {"p50_ms": round(pct(v, 0.5), 2), "p99_ms": round(pct(v, 0.99), 2),
                   "mean_ms": round(statistics.fmean(v) * 1000, 2), "note": note}
            for name, v, note in rows
        }
        out["fault_runs"] = [
            {"read": o.read_code, "read_s": round(o.read_seconds, 4), "write": o.write_code,
             "write_reason": o.write_reason, "write_s": round(o.write_seconds, 4),
             "resume_gap_s": round(o.resume_gap_seconds, 4),
             "stream_exact": o.proxied == o.direct and not o.stream_error,
             "events": len(o.proxied)}
            for o in outcomes
        ]
        print(json.dumps(out, indent=2))
        return
    print(f"{'measurement':<42} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}  note")
    for name, samples, note in rows:
        print(f"{name:<42} {pct(samples, 0.5):>8.2f} {pct(samples, 0.99):>8.2f} "
              f"{statistics.fmean(samples) * 1000:>8.2f}  {note}")


def run(endpoint: str, args: argparse.Namespace) -> None:
    rows: list[Row] = []
    outcomes: list[Outcome] = []
    if not args.only_faults:
        rows += asyncio.run(forwarding(endpoint, args.calls, args.rounds))
    if args.faults or args.only_faults:
        more, outcomes = faults(endpoint, args.faults or 5, args.hold)
        rows += more
    report(rows, outcomes, args.json)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--etcd", default="", help="use this etcd (host:port)")
    parser.add_argument("--faults", type=int, default=0,
                        help="runs of the frozen-replica scenario (processes)")
    parser.add_argument("--only-faults", action="store_true",
                        help="only the frozen-replica scenario (5 runs unless --faults)")
    parser.add_argument("--hold", type=float, default=3.0,
                        help="the proxy's --hold-timeout in the fault scenario (seconds)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    if args.etcd:
        run(args.etcd, args)
        return
    with EtcdServer() as etcd:
        run(etcd.endpoint, args)


if __name__ == "__main__":
    main()

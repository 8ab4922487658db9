"""One-shot lease keepalives: a stream per keepalive vs one shared stream.

    .venv/bin/python bench/keepalive_bench.py             # N = 2000 per mode
    .venv/bin/python bench/keepalive_bench.py --json      # one JSON object on stdout

In-process, against a throwaway local etcd (the one tests start,
:class:`drover.dev.etcd.EtcdServer`): ``--leases`` leases, then ``--n``
keepalives round-robin over them, each way:

* ``per_call``: what ``EtcdKV.lease_keepalive`` did before issue 31's
  follow-up: open a LeaseKeepAlive stream (``EtcdKV.keepalives``), send one
  request, read one reply, cancel the stream;
* ``shared``: ``EtcdKV.lease_keepalive`` now, every keepalive on the KV's
  one long-lived stream (:mod:`drover.coord.keepalive_mux`).

Each way twice: one keepalive at a time (``serial``: the latency of one) and
``--in-flight`` at a time (``concurrent``: a HeartbeatNodes call renews 64
nodes' leases together). Reported per keepalive: this process's CPU (all its
threads, gRPC's included: the client's cost), wall time, and the etcd
process's CPU. ``--rounds`` rounds, the two ways interleaved; the median
round is reported (a shared machine: best and worst in the JSON).
``--rate`` keepalives/s (10,000 nodes: ~35/s, bench/results/issue31/
liveness.md) turns the CPU difference into % of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from drover.config import EtcdSettings
from drover.coord import connect
from drover.coord.etcd_kv import EtcdKV
from drover.coord.kv import LeaseNotFound
from drover.dev.etcd import EtcdServer

TTL = 600


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def per_call(kv: EtcdKV, lease: int) -> int:
    """The old ``EtcdKV.lease_keepalive``, as it was."""
    stream = kv.keepalives(lease)
    try:
        await stream.send()
        async with asyncio.timeout(10.0):
            async for ttl in stream:
                if ttl <= 0:
                    raise LeaseNotFound(lease)
                return ttl
    finally:
        stream.cancel()
    raise RuntimeError("stream ended")


async def run(fn: Callable[[int], Awaitable[int]], leases: list[int], n: int,
              in_flight: int, etcd_pid: int) -> dict[str, float]:
    todo = [leases[i % len(leases)] for i in range(n)]
    e0, c0, t0 = cpu_seconds(etcd_pid), time.process_time(), time.perf_counter()
    if in_flight <= 1:
        for lease in todo:
            assert await fn(lease) == TTL
    else:
        async def worker(k: int) -> None:
            for lease in todo[k::in_flight]:
                assert await fn(lease) == TTL

        await asyncio.gather(*(worker(k) for k in range(in_flight)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    etcd = cpu_seconds(etcd_pid) - e0
    return {"client_cpu_ms": cpu / n * 1e3, "wall_ms": wall / n * 1e3,
            "etcd_cpu_ms": etcd / n * 1e3, "per_s": n / wall}


async def bench(args: argparse.Namespace, etcd: EtcdServer) -> dict[str, Any]:
    client = await connect(EtcdSettings(endpoints=(etcd.endpoint,)), purpose="bulk")
    kv = EtcdKV(client)
    try:
        leases = list(await asyncio.gather(*(kv.lease_grant(TTL) for _ in range(args.leases))))
        ways: dict[str, Callable[[int], Awaitable[int]]] = {
            "per_call": lambda lease: per_call(kv, lease), "shared": kv.lease_keepalive}
        for fn in ways.values():  # warm up: channel, stream, code paths
            await run(fn, leases, 200, 1, etcd.pid)
        rounds: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for mode, in_flight in (("serial", 1), ("concurrent", args.in_flight)):
                for way, fn in ways.items():
                    got = await run(fn, leases, args.n, in_flight, etcd.pid)
                    rounds.setdefault(f"{way}/{mode}", []).append(got)
        streams = kv._keepalives.opened
        await asyncio.gather(*(kv.lease_revoke(lease) for lease in leases))
    finally:
        await kv.close()
        await client.close()
    out: dict[str, Any] = {"n": args.n, "leases": args.leases, "in_flight": args.in_flight,
                           "rounds": args.rounds, "shared_streams_opened": streams,
                           "results": {}}
    for key, rs in rounds.items():
        med = {f: statistics.median(r[f] for r in rs) for f in rs[0]}
        med["client_cpu_ms_best"] = min(r["client_cpu_ms"] for r in rs)
        med["client_cpu_ms_worst"] = max(r["client_cpu_ms"] for r in rs)
        out["results"][key] = {f: round(v, 4) for f, v in med.items()}
    res = out["results"]
    for mode in ("serial", "concurrent"):
        old, new = res[f"per_call/{mode}"], res[f"shared/{mode}"]
        saved_ms = old["client_cpu_ms"] - new["client_cpu_ms"]
        out[f"{mode}_cpu_ratio"] = round(old["client_cpu_ms"] / new["client_cpu_ms"], 2)
        out[f"{mode}_saved_pct_of_core_at_rate"] = round(saved_ms * args.rate / 10, 2)
    out["rate_per_s"] = args.rate
    return out


def table(out: dict[str, Any]) -> str:
    lines = [f"{out['n']} keepalives per run over {out['leases']} leases, median of "
             f"{out['rounds']} rounds (concurrent: {out['in_flight']} in flight)",
             f"{'way/mode':22} {'client CPU ms':>14} {'wall ms':>9} {'etcd CPU ms':>12} "
             f"{'per s':>8}"]
    for key, r in out["results"].items():
        lines.append(f"{key:22} {r['client_cpu_ms']:14.3f} {r['wall_ms']:9.3f} "
                     f"{r['etcd_cpu_ms']:12.3f} {r['per_s']:8.0f}")
    for mode in ("serial", "concurrent"):
        lines.append(f"{mode}: per-call/shared client CPU x{out[f'{mode}_cpu_ratio']}, "
                     f"{out[f'{mode}_saved_pct_of_core_at_rate']} % of a core saved at "
                     f"{out['rate_per_s']:g} keepalives/s")
    lines.append(f"shared streams opened: {out['shared_streams_opened']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="keepalives per run")
    ap.add_argument("--leases", type=int, default=200)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rate", type=float, default=35.0,
                    help="keepalives/s for the %% of a core saved (10,000 nodes: ~35)")
    ap.add_argument("--json", action="store_true",
                    help="one JSON object on stdout (the table on stderr)")
    args = ap.parse_args()
    with EtcdServer(name="keepalive-bench") as etcd:
        out = asyncio.run(bench(args, etcd))
    if args.json:
        print(table(out), file=sys.stderr)
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(table(out))


if __name__ == "__main__":
    main()

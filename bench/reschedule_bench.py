"""Reschedule latency: from a crash to its replacement running.

    .venv/bin/python bench/reschedule_bench.py                     # table
    .venv/bin/python bench/reschedule_bench.py --json out.json     # and the numbers

Starts ``drover dev --nodes 3`` (etcd, the four services, a worker, three
simulated nodes: real processes), registers a service of ``--count``
allocations whose tasks crash ``--crash-after`` seconds after they start
(``sim.outcome: crash``) with ``reschedule {delay: --delay, constant}``,
and watches its allocations for ``--seconds`` through the proxy
(ListAllocations every 50 ms). Per reschedule it reports, from the failed
allocation's ``finished_at`` (the client's failure report, stored):

- ``placed``: the replacement's ``create_time`` (its plan committed);
- ``running``: the ``modify_time`` of the replacement's first stored
  version whose client status is running (the sim's report);
- ``overhead``: ``running`` minus the policy's delay: what drover adds
  (broker timer, dequeue, plan, commit, the sim's 0.2 s start).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2
from drover.dev.ports import wait_for_port
from drover.dev.supervisor import free_layout

RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING


def _ts(t: Any) -> float:
    return float(t.seconds + t.nanos / 1e9)


def _job(count: int, delay: float, crash_after: float) -> dict[str, Any]:
    return {"id": "crashy", "type": "service", "datacenters": ["dc1"], "task_groups": [{
        "name": "g", "count": count,
        "meta": {"sim.outcome": "crash", "sim.crash_after": str(crash_after)},
        "reschedule": {"delay": f"{delay}s", "delay_function": "constant"},
        "tasks": [{"name": "t", "driver": "sim", "resources": {"cpu": 100, "memory_mb": 64}}]}]}


def measure(count: int, delay: float, crash_after: float, seconds: float) -> dict[str, Any]:
    offset, lay = free_layout()
    env = {**os.environ, "DROVER_ADDR": lay.address("proxy")}
    with tempfile.TemporaryDirectory() as tmp:
        log = (Path(tmp) / "dev.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset),
             "--nodes", "3"], stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            if not wait_for_port(lay.host, lay.proxy, 60):
                raise SystemExit("the dev suite did not start")
            stub = state_pb2_grpc.StateServiceStub(grpc.insecure_channel(lay.address("proxy")))
            deadline = time.monotonic() + 60
            while _nodes(stub) < 3:  # the proxy finds the state replicas first
                if time.monotonic() > deadline:
                    raise SystemExit("no simulated nodes")
                time.sleep(0.3)
            spec = Path(tmp) / "crashy.json"
            spec.write_text(json.dumps(_job(count, delay, crash_after)))
            subprocess.run([sys.executable, "-m", "drover.cli.main", "job", "run", "--detach",
                            str(spec)], env=env, check=True, capture_output=True, timeout=60)
            return _watch(stub, delay, seconds)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
            log.close()


def _nodes(stub: Any) -> int:
    try:
        return len(stub.ListNodes(state_pb2.ListNodesRequest(), timeout=10).nodes)
    except grpc.RpcError:
        return 0


def _watch(stub: Any, delay: float, seconds: float) -> dict[str, Any]:
    seen: dict[str, allocation_pb2.Allocation] = {}
    running_at: dict[str, float] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        resp = stub.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace="default", filter='job_id == "crashy"', page_size=1000), timeout=10)
        for a in resp.allocations:
            seen[a.id] = a
            if a.client_status == RUNNING and a.id not in running_at:
                running_at[a.id] = _ts(a.modify_time)
        time.sleep(0.05)
    rows: list[dict[str, Any]] = []
    for a in seen.values():
        prev = seen.get(a.previous_allocation)
        if prev is None or not prev.HasField("finished_at"):
            continue
        crash = _ts(prev.finished_at)
        row: dict[str, Any] = {"alloc": a.id[:8], "previous": prev.id[:8],
                               "placed": _ts(a.create_time) - crash}
        if a.id in running_at:
            row["running"] = running_at[a.id] - crash
            row["overhead"] = row["running"] - delay
        rows.append(row)
    rows.sort(key=lambda r: r["placed"])
    over = [r["overhead"] for r in rows if "overhead" in r]
    return {"delay": delay, "reschedules": len(rows), "rows": rows,
            "overhead_p50": statistics.median(over) if over else None,
            "overhead_max": max(over) if over else None,
            "placed_p50": statistics.median(r["placed"] for r in rows) if rows else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3)
    ap.add_argument("--delay", type=float, default=5.0, help="policy delay (>= 5s, Nomad)")
    ap.add_argument("--crash-after", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=25.0, help="how long to watch")
    ap.add_argument("--json", metavar="PATH", help="also write the numbers here")
    args = ap.parse_args(argv)
    out = measure(args.count, args.delay, args.crash_after, args.seconds)
    print(f"reschedule delay {out['delay']:g}s (constant), {out['reschedules']} reschedules")
    print(f"{'alloc':10} {'previous':10} {'placed s':>9} {'running s':>10} {'overhead s':>11}")
    for r in out["rows"]:
        running = f"{r['running']:10.2f}" if "running" in r else f"{'-':>10}"
        overhead = f"{r['overhead']:11.2f}" if "overhead" in r else f"{'-':>11}"
        print(f"{r['alloc']:10} {r['previous']:10} {r['placed']:9.2f} {running} {overhead}")
    if out["overhead_p50"] is not None:
        print(f"crash -> replacement running: delay + {out['overhead_p50']:.2f}s (p50), "
              f"+ {out['overhead_max']:.2f}s (max)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Deployment watcher benchmark: watches, queries and reaction vs deployments.

    .venv/bin/python bench/deployments_bench.py                 # N = 10, 100, 1000
    .venv/bin/python bench/deployments_bench.py --n 10 --n 100

Starts a throwaway etcd; per N, a fresh key prefix with one state replica
(in-process, real gRPC, UpdateDeployment wired in, every call counted by a
server interceptor) and one watcher replica (DroverServer, leader). It
registers N service jobs (count 2, max_parallel 1: N concurrent running
deployments), places one allocation for each, and waits until the leader
watches all N. Then, while all N stay active, it runs ``--probes`` probes:
mark one deployment's allocation healthy (UpdateAllocations, as a client)
and time until the watcher's reaction is visible (the deployment's
healthy count written back, seen on a Subscribe stream). One probe per
deployment, so at most N probes.

Printed per N: etcd watchers in use (etcd's own /metrics,
``etcd_debugging_mvcc_watcher_total``), state queries/s and writes/s the
watcher made during the probe phase (from the state side's counters:
subscriptions are not queries), and reaction time p50/p99.
Goal (issue 6): watchers equal for 10 and 1,000; reaction at 1,000 within 2x of 10.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

HARNESS = Path(__file__).resolve().parents[1] / "tests" / "integration" / "deployments"
sys.path.insert(0, str(HARNESS))  # the integration tests' harness: same wiring

from deployments_harness import Scheduler, service_job, start_state, start_watcher  # noqa: E402

from drover.api.deployments.v1 import deployments_pb2  # noqa: E402
from drover.api.state.v1 import state_pb2  # noqa: E402
from drover.coord.keys import Keyspace  # noqa: E402
from drover.dev.etcd import EtcdServer  # noqa: E402

WRITES = frozenset({"UpdateDeployment", "UpsertEvaluations"})
STREAMS = frozenset({"Subscribe"})


class CountCalls(grpc.aio.ServerInterceptor):
    """Counts calls per state method (the watcher's and the bench's alike)."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: Any
    ) -> Any:
        self.calls[details.method.rsplit("/", 1)[-1]] += 1
        return await continuation(details)


def etcd_watchers(etcd: EtcdServer) -> int:
    m = re.search(r"^etcd_debugging_mvcc_watcher_total (\S+)$", etcd.metrics(), re.M)
    return int(float(m.group(1))) if m else -1


async def run_one(etcd: EtcdServer, n: int, probes: int) -> dict[str, Any]:
    prefix = f"/bench{uuid.uuid4().hex[:8]}/drover"
    counter = CountCalls()
    state = await start_state(etcd.endpoint, Keyspace(prefix), (counter,))
    watcher = await start_watcher(etcd.endpoint, prefix, state.address)
    sched = Scheduler(state.stub)
    try:
        deployments = []
        for i in range(n):
            reg = await sched.register(service_job(f"job{i}", count=2, max_parallel=1))
            deployments.append(reg.deployment_id)
        allocs: dict[str, str] = {}
        for start in range(0, n, 100):
            chunk = deployments[start:start + 100]
            ds = [await sched.deployment(i) for i in chunk]
            for d in ds:
                [allocs[d.id]] = await sched.place(d, 1)
        t0 = time.monotonic()
        while True:
            stats = await watcher.stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())
            if stats.active_watchers == n:
                break
            if time.monotonic() - t0 > 120:
                raise RuntimeError(f"watching only {stats.active_watchers}/{n}")
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # let placement writes settle
        watchers = etcd_watchers(etcd)

        seen: dict[str, asyncio.Event] = {}
        stream = state.stub.Subscribe(state_pb2.SubscribeRequest(
            topics=[state_pb2.TOPIC_DEPLOYMENT], namespace="*"))

        async def follow() -> None:
            async for resp in stream:
                for ev in resp.events:
                    groups = ev.deployment.task_groups
                    if ev.key in seen and "web" in groups and groups["web"].healthy_allocs:
                        seen[ev.key].set()

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.2)
        if follower.done():
            follower.result()
        before = collections.Counter(counter.calls)
        reactions = []
        started = time.monotonic()
        probes = min(probes, n)  # one probe per deployment: its first healthy alloc
        step = n // probes
        for k in range(probes):
            d_id = deployments[k * step]
            seen[d_id] = asyncio.Event()
            t = time.perf_counter()
            await sched.health([allocs[d_id]])
            await asyncio.wait_for(seen[d_id].wait(), 10)
            reactions.append((time.perf_counter() - t) * 1000)
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - started
        follower.cancel()
        stream.cancel()
        delta = counter.calls - before
        ours = {"GetDeployment", "UpdateAllocations", "GetWatcherStats"}
        queries = sum(v for k, v in delta.items()
                      if k not in WRITES and k not in STREAMS and k not in ours)
        writes = sum(v for k, v in delta.items() if k in WRITES)
        stats = await watcher.stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())
        reactions.sort()
        return {
            "n": n, "watchers": watchers, "qps": queries / elapsed, "wps": writes / elapsed,
            "p50": statistics.median(reactions),
            "p99": reactions[min(len(reactions) - 1, int(len(reactions) * 0.99))],
            "subs": stats.subscriptions, "wakeups": stats.wakeups,
            "subscribe_calls": counter.calls["Subscribe"],
        }
    finally:
        await watcher.close()
        await state.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, action="append")
    ap.add_argument("--probes", type=int, default=50)
    args = ap.parse_args()
    sizes = args.n or [10, 100, 1000]
    rows = []
    with EtcdServer() as etcd:
        for n in sizes:
            rows.append(await run_one(etcd, n, args.probes))
            print(f"done N={n}", file=sys.stderr, flush=True)
    print(f"{'deployments':>11} {'etcd watchers':>13} {'Subscribe calls':>15} "
          f"{'queries/s':>9} {'writes/s':>8} {'react p50 ms':>12} {'react p99 ms':>12}")
    for r in rows:
        print(f"{r['n']:>11} {r['watchers']:>13} {r['subscribe_calls'] - 1:>15} {r['qps']:>9.2f} "
              f"{r['wps']:>8.2f} {r['p50']:>12.1f} {r['p99']:>12.1f}")
    base, top = rows[0], rows[-1]
    print(f"watchers equal: {base['watchers'] == top['watchers']}; "
          f"p50 ratio {top['p50'] / base['p50']:.2f}x (goal <= 2x)")


if __name__ == "__main__":
    asyncio.run(main())

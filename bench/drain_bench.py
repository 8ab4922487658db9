"""Drain benchmark: how long draining a node of N allocations takes.

    .venv/bin/python bench/drain_bench.py                        # 100 allocations
    .venv/bin/python bench/drain_bench.py --max-parallel 1 --min-healthy 0.5 --json

Real processes, as a user runs them: `drover dev --nodes 3` (etcd, the four
services, a scheduler worker, three simulated nodes). One service job of
``--allocs`` allocations is placed on one node (the two others ineligible
meanwhile), then that node is drained (UpdateNodeDrain, the CLI's call)
and the run ends when the drain is complete. Each allocation migrates by
the group's ``migrate`` block (``--max-parallel`` at a time, each
replacement healthy for ``--min-healthy`` seconds before the next batch);
``--force`` drains with a deadline already past (everything at once).

Reported: the drain's wall time (until the node's drain is complete), the
time until every replacement is healthy, time per allocation, the fewest
healthy running allocations of the group seen meanwhile (sampled every
0.2 s: with max_parallel P it stays >= N - P; a force drain stops them
all at once), and the ``node-drain``
evaluations written. A migrating drain takes about
``ceil(N / P) x (min_healthy + the drainer's batch interval of 1 s +
placement and start)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2, node_pb2
from drover.dev.ports import wait_for_port
from drover.dev.supervisor import free_layout

CLI = [sys.executable, "-m", "drover.cli.main"]
ELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE
INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
RUN = 1
RUNNING = 2


def _job(args: argparse.Namespace) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="web", count=args.allocs, tasks=[job_pb2.Task(
        name="web", driver="sim", resources=job_pb2.Resources(cpu=20, memory_mb=32))])
    tg.migrate.max_parallel = args.max_parallel
    tg.migrate.min_healthy_time.FromNanoseconds(int(args.min_healthy * 1e9))
    tg.migrate.healthy_deadline.FromSeconds(120)
    return job_pb2.Job(id="drain-bench", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                       datacenters=["dc1"], task_groups=[tg])


async def _allocs(stub: Any) -> list[Any]:
    out: list[Any] = []
    token = ""
    while True:
        resp = await stub.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace="default", filter='job_id == "drain-bench"', page_size=1000,
            page_token=token), timeout=30)
        out.extend(resp.allocations)
        token = resp.next_page_token
        if not token:
            return out


def _up(allocs: list[Any]) -> int:
    return sum(1 for a in allocs if a.desired_status == RUN and a.client_status == RUNNING
               and a.deployment_status.HasField("healthy") and a.deployment_status.healthy)


async def _until(check: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if await check():
                return
        except grpc.aio.AioRpcError:  # the suite is still starting
            pass
        await asyncio.sleep(0.2)
    raise TimeoutError(f"not within {within}s: {what}")


async def _measure(address: str, args: argparse.Namespace) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(address) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)

        async def nodes() -> list[Any]:
            return list((await stub.ListNodes(state_pb2.ListNodesRequest(), timeout=30)).nodes)

        await _until(lambda: _count(nodes, 3), 180, "3 simulated nodes")
        ids = sorted(n.id for n in await nodes())
        target, others = ids[0], ids[1:]
        for n in others:
            await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
                id=n, scheduling_eligibility=INELIGIBLE), timeout=30)
        await stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(args)), timeout=30)

        async def all_up() -> bool:
            return _up(await _allocs(stub)) == args.allocs

        await _until(all_up, 120, f"{args.allocs} healthy allocations")
        assert {a.node_id for a in await _allocs(stub)} == {target}
        for n in others:
            await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
                id=n, scheduling_eligibility=ELIGIBLE), timeout=30)
        req = state_pb2.UpdateNodeDrainRequest(id=target)
        req.drain_strategy.deadline.FromSeconds(3600)
        req.drain_strategy.force = args.force
        low = args.allocs
        started = time.monotonic()
        await stub.UpdateNodeDrain(req, timeout=30)
        drained = 0.0
        while True:  # sampled until the drain is complete and every replacement healthy
            allocs = await _allocs(stub)
            up = _up(allocs)
            low = min(low, up)
            if not drained:
                node = (await stub.GetNode(state_pb2.GetNodeRequest(id=target),
                                           timeout=30)).node
                if node.last_drain.status == node_pb2.DRAIN_STATUS_COMPLETE:
                    drained = time.monotonic() - started
            elif up == args.allocs and not any(
                    a.node_id == target for a in allocs if a.desired_status == RUN):
                break
            if time.monotonic() - started > args.timeout:
                raise TimeoutError(f"the drain did not settle within {args.timeout}s")
            await asyncio.sleep(0.2)
        settled = time.monotonic() - started
        evals = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
            namespace="*", filter='triggered_by == "node-drain"', page_size=1000), timeout=30)
        return {"allocs": args.allocs, "max_parallel": args.max_parallel,
                "min_healthy_s": args.min_healthy, "force": args.force,
                "drain_s": round(drained, 2), "all_healthy_s": round(settled, 2),
                "per_alloc_ms": round(1000 * drained / args.allocs, 1),
                "fewest_up": low, "node_drain_evals": len(evals.evaluations),
                "estimate_s": (0.0 if args.force else round(
                    math.ceil(args.allocs / max(1, args.max_parallel))
                    * (args.min_healthy + 1.0), 1))}


async def _count(nodes: Any, n: int) -> bool:
    return len(await nodes()) == n


def run(args: argparse.Namespace) -> dict[str, Any]:
    offset, lay = free_layout()
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as log:
        dev = subprocess.Popen([*CLI, "dev", "--port-offset", str(offset), "--nodes", "3"],
                               stdout=log, stderr=subprocess.STDOUT)
        try:
            assert wait_for_port(lay.host, lay.proxy, 180), "dev suite did not start"
            return asyncio.run(_measure(lay.address("proxy"), args))
        finally:
            dev.send_signal(signal.SIGTERM)
            dev.wait(20)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--allocs", type=int, default=100)
    p.add_argument("--max-parallel", type=int, default=10)
    p.add_argument("--min-healthy", type=float, default=1.0, help="seconds")
    p.add_argument("--force", action="store_true", help="deadline already past")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", type=Path, help="also write the JSON result here")
    args = p.parse_args()
    result = run(args)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result, indent=2))
        return
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()

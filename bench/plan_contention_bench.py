"""Plans racing for one node's room through two state replicas: how many
plans are refused per second on a contended node, and that none overcommits.

    .venv/bin/python bench/plan_contention_bench.py [--seconds 8] [--clients 8] [--json]

Starts a throwaway etcd and two state replicas in-process over it, each
behind a real gRPC server (no broker: the delivery check is off, this
measures the per-node ordering). One node, ``hot``, has room for
``--slots`` allocations; ``--clients`` workers per replica each own a job
and alternate, as fast as they can, between a plan placing one allocation
on ``hot`` and a plan stopping it. With more workers than slots the node's
last room is always contended: a placement is committed, or refused with
"node has no room: cpu" (the synced view saw it full) or "node changed"
(it lost the etcd race on the usage record every attempt). Reported:
plans/s, committed placements/s, refused placements/s by reason, the
plan latency p50/p99, and the most the node ever held (checked after every
committed placement and at the end, from etcd through a replica).

Baseline, same run: raw etcd compare-and-swap txns on one key by the same
number of concurrent clients (what ordering through one etcd key costs
without a state service): successes/s and failed compares/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.coord.keys import Keyspace
from drover.coord.kv import Compare, Put
from drover.dev.etcd import EtcdServer
from drover.rpc.errors import ErrorInterceptor
from drover.state.app import EtcdStore, StateService, build_on_store

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
CPU = 100


async def _serve(endpoint: str, ks: Keyspace) -> tuple[StateService, grpc.aio.Server,
                                                       grpc.aio.Channel, grpc.aio.Channel]:
    etcd = grpc.aio.insecure_channel(endpoint)
    service = await build_on_store(EtcdStore(etcd), ks)
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    for binding in service.bindings:
        binding.add(binding.servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return service, server, grpc.aio.insecure_channel(f"127.0.0.1:{port}"), etcd


class Tally:
    def __init__(self) -> None:
        self.plans = 0
        self.placed = 0
        self.stops = 0
        self.refused: dict[str, int] = {}
        self.latency: list[float] = []
        self.max_held = 0


async def _worker(stub: Any, job_id: str, until: float, tally: Tally) -> None:
    n = 0
    while time.monotonic() < until:
        job = (await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id=job_id))).job
        allocs = (await stub.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace="default", filter=f'job_id == "{job_id}"'))).allocations
        live = [a for a in allocs if a.desired_status == RUN]
        req = state_pb2.SubmitPlanRequest(
            eval_id=f"{job_id}-{n}", namespace="default", job_id=job_id,
            job_index=job.modify_index, alloc_indexes={a.id: a.modify_index for a in allocs},
            node_indexes={"hot": 1})
        if live:
            stop = allocation_pb2.Allocation()
            stop.CopyFrom(live[0])
            stop.desired_status = STOP
            req.updates.append(stop)
        else:
            req.placements.append(allocation_pb2.Allocation(
                id=f"{job_id}-a{n}", namespace="default", job_id=job_id, task_group="g",
                node_id="hot", name=f"{job_id}.g[0]", desired_status=RUN,
                resources=job_pb2.Resources(cpu=CPU, memory_mb=10)))
        n += 1
        t0 = time.perf_counter()
        try:
            resp = await stub.SubmitPlan(req, timeout=30)
        except grpc.aio.AioRpcError:
            continue  # PLAN_STALE cannot happen here (one worker per job); count nothing
        tally.latency.append(time.perf_counter() - t0)
        tally.plans += 1
        if live:
            tally.stops += resp.updated
            continue
        tally.placed += resp.placed
        for r in resp.refused:
            tally.refused[r.reason] = tally.refused.get(r.reason, 0) + len(r.placement_ids)
        if resp.placed:
            tally.max_held = max(tally.max_held, await _held(stub))


async def _held(stub: Any) -> int:
    allocs = (await stub.ListAllocations(state_pb2.ListAllocationsRequest(
        namespace="default", filter='node_id == "hot" && desired_status == "run"'))).allocations
    return sum(a.resources.cpu for a in allocs) // CPU


async def _baseline(store: EtcdStore, clients: int, seconds: float) -> dict[str, float]:
    key = b"/rawbase/hot"
    await store.txn([], [Put(key, b"0")])
    ok = failed = 0
    until = time.monotonic() + seconds

    async def client() -> None:
        nonlocal ok, failed
        while time.monotonic() < until:
            page = await store.range(key, b"")
            mod = page.kvs[0].mod_revision
            res = await store.txn([Compare(key, "mod", mod)], [Put(key, b"x")])
            if res.succeeded:
                ok += 1
            else:
                failed += 1

    await asyncio.gather(*(client() for _ in range(clients)))
    return {"cas_ok_per_s": ok / seconds, "cas_failed_per_s": failed / seconds}


async def run(seconds: float, clients: int, slots: int) -> dict[str, Any]:
    etcd = EtcdServer().start()
    ks = Keyspace("/bench")
    out: dict[str, Any] = {"seconds": seconds, "clients": 2 * clients, "slots": slots}
    served = []
    try:
        a = await _serve(etcd.endpoint, ks)
        served.append(a)
        b = await _serve(etcd.endpoint, ks)
        served.append(b)
        stubs = [state_pb2_grpc.StateServiceStub(a[2]), state_pb2_grpc.StateServiceStub(b[2])]
        await stubs[0].UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
            id="hot", datacenter="dc1", status=node_pb2.NODE_STATUS_READY,
            resources=job_pb2.Resources(cpu=slots * CPU, memory_mb=100_000))))
        jobs = [f"j{i}" for i in range(2 * clients)]
        for j in jobs:
            await stubs[0].RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(
                id=j, datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
                    name="g", count=1, tasks=[job_pb2.Task(name="t", driver="sim")])])))
        await stubs[1].GetJob(state_pb2.GetJobRequest(namespace="default", id=jobs[-1]))
        tally = Tally()
        until = time.monotonic() + seconds
        t0 = time.perf_counter()
        await asyncio.gather(*(_worker(stubs[i % 2], j, until, tally)
                               for i, j in enumerate(jobs)))
        wall = time.perf_counter() - t0
        held_end = max([await _held(s) for s in stubs])
        lat = sorted(tally.latency)
        out.update({
            "plans_per_s": tally.plans / wall,
            "placed_per_s": tally.placed / wall,
            "stops_per_s": tally.stops / wall,
            "refused_per_s": sum(tally.refused.values()) / wall,
            "refused_by_reason_per_s": {k: v / wall for k, v in sorted(tally.refused.items())},
            "plan_p50_ms": statistics.median(lat) * 1000 if lat else 0.0,
            "plan_p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else 0.0,
            "max_held": max(tally.max_held, held_end),
            "overcommitted": max(tally.max_held, held_end) > slots,
        })
        out["etcd_baseline"] = await _baseline(EtcdStore(a[3]), 2 * clients, min(seconds, 5.0))
    finally:
        for service, server, channel, etcd_ch in served:
            await channel.close()
            await server.stop(None)
            await service.close()
            await etcd_ch.close()
        etcd.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=8, help="workers per replica")
    parser.add_argument("--slots", type=int, default=4, help="allocations the node holds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = asyncio.run(run(args.seconds, args.clients, args.slots))
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"2 state replicas, {out['clients']} workers, node room {out['slots']} allocations, "
          f"{out['seconds']:.0f} s", file=sys.stderr)
    rows = [("plans/s", out["plans_per_s"]), ("placed/s", out["placed_per_s"]),
            ("stops/s", out["stops_per_s"]), ("refused placements/s", out["refused_per_s"])]
    rows += [(f"  {k}", v) for k, v in out["refused_by_reason_per_s"].items()]
    rows += [("plan p50 ms", out["plan_p50_ms"]), ("plan p99 ms", out["plan_p99_ms"]),
             ("max held (slots)", out["max_held"]),
             ("etcd CAS ok/s (baseline)", out["etcd_baseline"]["cas_ok_per_s"]),
             ("etcd CAS failed/s", out["etcd_baseline"]["cas_failed_per_s"])]
    for name, v in rows:
        print(f"{name:28s} {v:10.1f}")
    print("overcommitted: " + ("YES" if out["overcommitted"] else "never"))


if __name__ == "__main__":
    main()

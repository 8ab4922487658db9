"""GC benchmark: one garbage collection pass over N terminal evaluations.

    .venv/bin/python bench/gc_bench.py               # N = 100,000
    .venv/bin/python bench/gc_bench.py --n 1000000 --json

Starts a throwaway etcd and seeds, with raw txns (seeding is not measured),
three sets of N keys: terminal evaluations for the GC pass, terminal
evaluations for the eval-delete walk, and a raw copy for etcd's own delete
baseline, plus 1,000 pending evaluations with a running allocation each
that nothing deletes (the readers' targets; the allocations make every
judged evaluation pay its allocation lookup, as in a real cluster). One
state replica runs in-process behind a real gRPC server. In the same run it
measures, each with a reader issuing GetEvaluation and a
first-page ListEvaluations back to back the whole time:

- raw etcd deletes in txns of 120 keys (the baseline);
- ``DeleteEvaluations`` by filter, looping on the page token (eval delete);
- one GC pass of the deployment watcher's :class:`GarbageCollector`, fenced,
  over the GarbageCollect RPC (the real leader code, not a copy of it).

Reported per phase: wall time, objects/s, the largest etcd txn (operations,
the revision marker included), and the reader's p50/p99/max call latency;
plus the same reader's latency with nothing else running.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, scheduler_pb2
from drover.coord.fence import Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import Delete, Put
from drover.deployments.config import GcConfig
from drover.deployments.gc import GarbageCollector
from drover.deployments.state_api import GrpcStateApi
from drover.dev.etcd import EtcdServer
from drover.rpc.errors import ErrorInterceptor
from drover.rpc.replicas import ReplicaPool
from drover.state.app import EtcdStore, build_on_store
from drover.state.cache import marker_put
from drover.state.core import codec
from drover.state.core.reap import PAGE

LIVE = 1000


def make_eval(eval_id: str, i: int, trigger: str, status: int) -> bytes:
    return codec.encode(evaluation_pb2.Evaluation(
        id=eval_id, namespace="default", priority=50,
        type="service", triggered_by=trigger, job_id=f"job-{i % 1000}", status=status,  # type: ignore[arg-type]
        create_time={"seconds": 1_700_000_000 + i}, modify_time={"seconds": 1_700_000_000 + i}))


async def raw_puts(store: EtcdStore, items: list[tuple[bytes, bytes]], marker: Put | None,
                   workers: int = 4) -> None:
    batches = [items[i:i + PAGE] for i in range(0, len(items), PAGE)]

    async def worker(k: int) -> None:
        for b in batches[k::workers]:
            await store.txn([], [*(Put(key, v) for key, v in b), *([marker] if marker else [])])

    await asyncio.gather(*(worker(k) for k in range(workers)))


class Reader:
    """Back-to-back reads while a phase runs; the latency of each call."""

    def __init__(self, stub: Any, ids: list[str]) -> None:
        self.stub, self.ids = stub, ids
        self.samples: list[float] = []
        self._stop = asyncio.Event()
        self._rnd = random.Random(7)

    async def run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            await self.stub.GetEvaluation(state_pb2.GetEvaluationRequest(
                namespace="default", id=self._rnd.choice(self.ids)))
            self.samples.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await self.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
                filter='status == "pending"', page_size=20))
            self.samples.append(time.perf_counter() - t0)
            await asyncio.sleep(0.002)

    async def during(self, work: Callable[[], Awaitable[Any]]) -> tuple[Any, dict[str, float]]:
        self.samples, self._stop = [], asyncio.Event()
        task = asyncio.create_task(self.run())
        try:
            result = await work()
        finally:
            self._stop.set()
            await task
        s = sorted(self.samples)
        return result, {
            "reads": len(s), "p50_ms": statistics.median(s) * 1000,
            "p99_ms": s[min(len(s) - 1, int(len(s) * 0.99))] * 1000, "max_ms": s[-1] * 1000,
        }


async def main(n: int) -> dict[str, Any]:
    etcd = EtcdServer(extra_args=("--quota-backend-bytes", str(8 * 2**30))).start()
    out: dict[str, Any] = {"n": n, "page": PAGE}
    try:
        channel = grpc.aio.insecure_channel(etcd.endpoint, options=[
            ("grpc.max_receive_message_length", 64 * 2**20)])
        store = EtcdStore(channel, timeout=60)
        ks = Keyspace("/bench")
        keys = codec.KeyCodec(ks)
        rnd = random.Random(1)
        complete = evaluation_pb2.EVALUATION_STATUS_COMPLETE
        print(f"seeding 3 x {n:,} evaluations ...", flush=True)
        t0 = time.perf_counter()
        for trigger in ("gc", "delete"):
            items = []
            for i in range(n):
                eid = f"{trigger}-{uuid.UUID(int=rnd.getrandbits(128))}"
                items.append((keys.key(codec.EVALUATIONS, "default", eid),
                              make_eval(eid, i, trigger, complete)))
            await raw_puts(store, items, marker_put(keys))
        live_ids = [f"live-{i}" for i in range(LIVE)]
        await raw_puts(store, [(keys.key(codec.EVALUATIONS, "default", i), codec.encode(
            evaluation_pb2.Evaluation(id=i, namespace="default", type="service",
                                      status=evaluation_pb2.EVALUATION_STATUS_PENDING)))
            for i in live_ids], marker_put(keys))
        # One running allocation per live evaluation: the allocation index is
        # not empty, so every judged evaluation pays its lookup, as in a cluster.
        await raw_puts(store, [(keys.key(codec.ALLOCATIONS, "default", f"a-{i}"), codec.encode(
            allocation_pb2.Allocation(
                id=f"a-{i}", namespace="default", eval_id=i, job_id="live",
                desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
                client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)))
            for i in live_ids], marker_put(keys))
        raw_keys = [f"/rawbase/{i:09d}".encode() for i in range(n)]
        await raw_puts(store, [(k, b"x" * 150) for k in raw_keys], None)
        out["seed_s"] = time.perf_counter() - t0
        del items

        t0 = time.perf_counter()
        service = await build_on_store(store, ks)
        out["cache_load_s"] = time.perf_counter() - t0
        server = grpc.aio.server(interceptors=[ErrorInterceptor()])
        for binding in service.bindings:
            binding.add(binding.servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        client = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        stub = state_pb2_grpc.StateServiceStub(client)
        reader = Reader(stub, live_ids)

        _, out["idle_reads"] = await reader.during(lambda: asyncio.sleep(3.0))

        async def raw_delete() -> dict[str, float]:
            t0 = time.perf_counter()
            for i in range(0, n, PAGE):
                await store.txn([], [Delete(k) for k in raw_keys[i:i + PAGE]])
            return {"s": time.perf_counter() - t0, "largest_txn": min(n, PAGE)}

        out["raw_delete"], out["raw_delete"]["reads"] = await reader.during(raw_delete)

        await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
            config=scheduler_pb2.SchedulerConfig(pause_eval_broker=True)))

        async def eval_delete() -> dict[str, float]:
            total, token, calls, slowest = 0, "", 0, 0.0
            t0 = time.perf_counter()
            while True:
                c0 = time.perf_counter()
                r = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
                    filter='triggered_by == "delete"', page_size=127, page_token=token))
                slowest = max(slowest, time.perf_counter() - c0)
                total, token, calls = total + r.deleted, r.next_page_token, calls + 1
                if not token:
                    break
            assert total == n, (total, n)
            # page 127 + the revision marker: etcd's cap, as eval delete sends it
            return {"s": time.perf_counter() - t0, "calls": calls, "deleted": total,
                    "slowest_call_ms": slowest * 1000, "largest_txn": 128}

        out["eval_delete"], out["eval_delete"]["reads"] = await reader.during(eval_delete)
        await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
            config=scheduler_pb2.SchedulerConfig(pause_eval_broker=False)))

        fence_key = ks.election_prefix("deployments") + "bench"
        fence = Fence(fence_key, (await store.txn([], [Put(fence_key.encode(), b"")])).revision)
        pool = ReplicaPool("state", state_pb2_grpc.StateServiceStub,
                           [f"127.0.0.1:{port}"])
        gc = GarbageCollector(GrpcStateApi(pool, timeout=60), GcConfig())

        async def gc_pass() -> dict[str, float]:
            r = await gc.run_pass(fence)
            assert r.evaluations == n, (r.evaluations, n)
            return {"s": r.duration, "deleted": r.evaluations, "examined": r.examined,
                    "calls": r.calls, "txns": r.txns, "largest_txn": r.largest_txn}

        out["gc_pass"], out["gc_pass"]["reads"] = await reader.during(gc_pass)
        left = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(namespace="*"))
        assert left.count == LIVE, left.count
        await pool.close()
        await client.close()
        await server.stop(None)
        await service.close()
        await channel.close()
    finally:
        etcd.stop()
    return out


def report(out: dict[str, Any]) -> None:
    n = out["n"]
    print(f"\nGC bench, N = {n:,} terminal evaluations per phase "
          f"(seed {out['seed_s']:.1f} s, cache load {out['cache_load_s']:.1f} s)")
    print(f"{'phase':<34} {'time':>8} {'objects/s':>10} {'largest txn':>11} "
          f"{'read p50':>9} {'read p99':>9} {'read max':>9}")
    idle = out["idle_reads"]
    print(f"{'reads alone':<34} {'':>8} {'':>10} {'':>11} {idle['p50_ms']:>7.1f}ms "
          f"{idle['p99_ms']:>7.1f}ms {idle['max_ms']:>7.1f}ms")
    for key, label in (("raw_delete", "raw etcd delete (120/txn)"),
                       ("eval_delete", "DeleteEvaluations by filter"),
                       ("gc_pass", "GC pass (GarbageCollect, fenced)")):
        p = out[key]
        r = p["reads"]
        print(f"{label:<34} {p['s']:>6.1f} s {n / p['s']:>10,.0f} {p['largest_txn']:>11} "
              f"{r['p50_ms']:>7.1f}ms {r['p99_ms']:>7.1f}ms {r['max_ms']:>7.1f}ms")
    g, d = out["gc_pass"], out["eval_delete"]
    print(f"GC: {g['calls']} calls, {g['txns']} txns; eval delete: {d['calls']} calls, "
          f"slowest {d['slowest_call_ms']:.1f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    result = asyncio.run(main(args.n))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)

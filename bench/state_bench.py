"""State service benchmark: a big evaluation backlog, against raw etcd.

    .venv/bin/python bench/state_bench.py            # N = 100,000
    .venv/bin/python bench/state_bench.py --n 1000000 --json

Starts a throwaway etcd, seeds N evaluations (raw txns: seeding is not what
is measured), starts one state replica as deployed -- its own process,
``drover serve state`` -- and prints one table (``--json``: one JSON object
on stdout, the table on stderr): delete-all-by-filter vs raw etcd deletes (one txn at a time, of
the largest size), the slowest delete call, Count and first-page List latency
with an indexed and a non-indexed filter, RegisterJob write rate vs raw etcd
txns of the same shape, and resident memory per cached evaluation.
Goals (issue 4): 1M deleted < 60 s with no call > 50 ms; Count over 1M < 1 s;
first page < 20 ms; <= 1 KB per cached evaluation; writes >= 50% of raw.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import resource
import subprocess
import sys
import time
import uuid
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2, job_pb2, scheduler_pb2
from drover.coord.keys import Keyspace
from drover.coord.kv import MAX_TXN_OPS, Delete, Put
from drover.dev.etcd import EtcdServer
from drover.dev.ports import free_port
from drover.state.app import EtcdStore
from drover.state.cache import Cache, marker_put
from drover.state.config import CacheConfig, WriterConfig
from drover.state.core import codec

BATCH = MAX_TXN_OPS - 1
STATUSES = [evaluation_pb2.EVALUATION_STATUS_PENDING, evaluation_pb2.EVALUATION_STATUS_COMPLETE,
            evaluation_pb2.EVALUATION_STATUS_FAILED]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_eval(rnd: random.Random, i: int) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(
        id=str(uuid.UUID(int=rnd.getrandbits(128))), namespace="default",
        priority=1 + i % 100, type="service", triggered_by="bench",
        job_id=f"job-{i % 1000}", status=rnd.choice(STATUSES),
        create_time={"seconds": 1_700_000_000 + i},
    )


async def raw_puts(store: EtcdStore, items: list[tuple[bytes, bytes]], marker: Put | None,
                   workers: int = 4) -> None:
    batches = [items[i:i + BATCH] for i in range(0, len(items), BATCH)]

    async def worker(k: int) -> None:
        for b in batches[k::workers]:
            ops = [Put(key, v) for key, v in b] + ([marker] if marker else [])
            await store.txn([], ops)

    await asyncio.gather(*(worker(k) for k in range(workers)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn_state(etcd: str, port: int, max_txn_ops: int,
                in_flight: int = 0) -> subprocess.Popen[bytes]:
    """The state service as deployed: its own process, ``drover serve state``
    (told etcd's --max-txn-ops when the bench raised it)."""
    told = ["--state-max-txn-ops", str(max_txn_ops)] if max_txn_ops else []
    if in_flight:
        told += ["--state-delete-txns-in-flight", str(in_flight)]
    return subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "serve", "state", "--etcd", etcd,
         "--etcd-prefix", "/bench", "--listen", f"127.0.0.1:{port}", "--log-level", "WARNING",
         *told],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


async def wait_serving(channel: grpc.aio.Channel, proc: subprocess.Popen[bytes],
                       within: float = 600) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"drover serve state exited with {proc.returncode}")
        try:
            r = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
            if r.status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.aio.AioRpcError:
            pass
        await asyncio.sleep(0.05)
    raise TimeoutError("the state service did not become SERVING")


async def list_and_memory(endpoint: str, n: int) -> tuple[float, float]:
    """(seconds, RSS growth per object) of a fresh process that only lists
    the cache (a fresh process: freed seeding memory would otherwise mask the
    growth)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--measure-cache", endpoint, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    rss, secs = out.decode().strip().splitlines()[-1].split()
    return float(secs), int(rss) / n


async def measure_cache(endpoint: str) -> None:
    channel = grpc.aio.insecure_channel(endpoint, options=[
        ("grpc.max_receive_message_length", 64 * 2**20)])
    store = EtcdStore(channel, timeout=60)
    cache = Cache(store, codec.KeyCodec(Keyspace("/bench")), CacheConfig())
    await store.revision()
    gc.collect()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    await cache.start()
    took = time.perf_counter() - t0
    await cache.close()
    gc.collect()
    print(rss_bytes() - rss0, took)


async def timed(coro):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    res = await coro
    return res, time.perf_counter() - t0


def pct(samples: list[float], q: float) -> float:
    xs = sorted(samples)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else 0.0


async def main(n: int, writes: int, as_json: bool, max_txn_ops: int, in_flight: int) -> None:
    say: Any = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if as_json else print
    extra: tuple[str, ...] = ("--quota-backend-bytes", str(8 * 2**30))
    if max_txn_ops:
        extra += ("--max-txn-ops", str(max_txn_ops))
    etcd = EtcdServer(extra_args=extra).start()
    rows: list[tuple[str, str, str]] = []
    out: dict[str, Any] = {"n": n}
    proc: subprocess.Popen[bytes] | None = None
    try:
        channel = grpc.aio.insecure_channel(etcd.endpoint, options=[
            ("grpc.max_receive_message_length", 64 * 2**20)])
        store = EtcdStore(channel, timeout=60, max_txn_ops=max_txn_ops or MAX_TXN_OPS)
        ks = Keyspace("/bench")
        keys = codec.KeyCodec(ks)
        rnd = random.Random(1)
        say(f"seeding {n} evaluations ...", flush=True)
        evs = [make_eval(rnd, i) for i in range(n)]
        items = [(keys.key(codec.EVALUATIONS, e.namespace, e.id), codec.encode(e)) for e in evs]
        t0 = time.perf_counter()
        await raw_puts(store, items, marker_put(keys))
        seed_s = time.perf_counter() - t0
        # The baseline's own copy, outside the service's prefix.
        raw_keys = [b"/rawbase" + k for k, _ in items]
        await raw_puts(store, [(k, v) for k, (_, v) in zip(raw_keys, items, strict=True)], None)
        del items, evs
        list_s, per_eval = await list_and_memory(etcd.endpoint, n)
        port = free_port()
        t0 = time.perf_counter()
        proc = spawn_state(etcd.endpoint, port, max_txn_ops, in_flight)
        client = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        await wait_serving(client, proc)
        ready_s = time.perf_counter() - t0
        stub = state_pb2_grpc.StateServiceStub(client)
        rows.append(("seed (raw etcd txns)", f"{seed_s:.1f} s", f"{n / seed_s:,.0f} keys/s"))
        rows.append(("cache initial list", f"{list_s:.1f} s", f"{n / list_s:,.0f} objects/s"))
        rows.append(("state process start to SERVING", f"{ready_s:.1f} s",
                     "drover serve state: imports, connect, list"))
        rows.append(("RSS per cached evaluation", f"{per_eval:,.0f} B", "goal <= 1024 B"))
        out.update(seed_s=seed_s, initial_list_s=list_s, ready_s=ready_s,
                   rss_bytes_per_eval=per_eval)

        for label, flt in [("status+job filter", 'status == "pending" && job_id == "job-7"'),
                           ("status filter", 'status == "pending"'),
                           ("non-indexed filter", "priority > 90")]:
            c, c_s = await timed(stub.CountEvaluations(
                state_pb2.CountEvaluationsRequest(namespace="*", filter=flt)))
            lst, l_s = await timed(stub.ListEvaluations(
                state_pb2.ListEvaluationsRequest(namespace="*", filter=flt, page_size=100)))
            rows.append((f"Count, {label}", f"{c_s * 1000:.1f} ms", f"{c.count:,} matched"))
            rows.append((f"first page List, {label}", f"{l_s * 1000:.1f} ms",
                         f"{len(lst.evaluations)} items"))
            out.setdefault("count_ms", {})[label] = c_s * 1000
            out.setdefault("first_page_ms", {})[label] = l_s * 1000

        # Writes: RegisterJob vs raw txns of the same shape (job, version, eval, marker).
        async def register(i: int) -> None:
            job = job_pb2.Job(id=f"w{i}", datacenters=["dc1"],
                              task_groups=[job_pb2.TaskGroup(name="g", count=1)])
            await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))

        async def raw_register(i: int) -> None:
            ops = [Put(f"/rawjobs/{i}/{k}".encode(), b"x" * 120) for k in range(3)]
            await store.txn([], [*ops, Put(b"/rawjobs/marker", b"")])

        async def rate(fn, count: int, conc: int = 16) -> float:  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            async def w(k: int) -> None:
                for i in range(k, count, conc):
                    await fn(i)
            await asyncio.gather(*(w(k) for k in range(conc)))
            return count / (time.perf_counter() - t0)

        raw_rate = await rate(raw_register, writes)
        reg_rate = await rate(register, writes)
        rows.append(("RegisterJob write rate", f"{reg_rate:,.0f} /s",
                     f"{reg_rate / raw_rate:.0%} of raw etcd ({raw_rate:,.0f} txn/s)"))
        out["register_job"] = {"per_s": reg_rate, "raw_txn_per_s": raw_rate,
                               "ratio_to_raw": reg_rate / raw_rate}

        await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
            config=scheduler_pb2.SchedulerConfig(pause_eval_broker=True)))
        total, token, calls = 0, "", 0
        call_s: list[float] = []
        t0, cpu0 = time.perf_counter(), cpu_seconds(proc.pid)
        while True:
            # A large page_size: the service clamps it to its own (configured) limit.
            r, s = await timed(stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
                filter='triggered_by == "bench"', page_size=10_000, page_token=token)))
            total, token, calls = total + r.deleted, r.next_page_token, calls + 1
            call_s.append(s)
            if not token:
                break
        del_s = time.perf_counter() - t0
        # The state process's CPU per deleted evaluation: steadier than wall
        # time on a shared machine.
        del_cpu = cpu_seconds(proc.pid) - cpu0
        left = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(
            namespace="*", filter='triggered_by == "bench"'))
        # The baseline: the same keys deleted by one client in txns of the
        # largest size etcd allows, one txn at a time (a call of the service
        # keeps several smaller txns in flight: its own design, measured
        # against what a plain etcd client does).
        raw_batch = (max_txn_ops or MAX_TXN_OPS) - 1
        t0 = time.perf_counter()
        raw_call_s: list[float] = []
        for i in range(0, len(raw_keys), raw_batch):
            _, s = await timed(store.txn([], [Delete(k) for k in raw_keys[i:i + raw_batch]]))
            raw_call_s.append(s)
        raw_s = time.perf_counter() - t0
        rows.append(("delete all by filter", f"{del_s:.1f} s",
                     f"{total / del_s:,.0f} evals/s, {calls} calls, {left.count} left"))
        rows.append(("raw etcd delete, txns of the largest size", f"{raw_s:.1f} s",
                     f"{n / raw_s:,.0f} keys/s; ours = {raw_s / del_s:.0%} of raw"))
        rows.append(("state process CPU per 1k deleted", f"{del_cpu / total * 1e6:.1f} ms", ""))
        rows.append(("DeleteEvaluations call p50 / p99", f"{pct(call_s, 0.5) * 1000:.1f} ms",
                     f"p99 {pct(call_s, 0.99) * 1000:.1f} ms; goal p99 <= 50 ms"))
        rows.append(("slowest DeleteEvaluations call", f"{max(call_s) * 1000:.1f} ms",
                     f"raw slowest txn {max(raw_call_s) * 1000:.1f} ms; "
                     f"{sum(x > 0.05 for x in call_s)} calls over 50 ms"))
        out["delete"] = {
            "s": del_s, "raw_s": raw_s, "ratio_to_raw": raw_s / del_s, "calls": calls,
            "evals_per_call": total / calls, "raw_txn_keys": raw_batch,
            "p50_call_ms": pct(call_s, 0.5) * 1000, "p99_call_ms": pct(call_s, 0.99) * 1000,
            "max_call_ms": max(call_s) * 1000, "calls_over_50ms": sum(x > 0.05 for x in call_s),
            "raw_p99_txn_ms": pct(raw_call_s, 0.99) * 1000,
            "raw_max_txn_ms": max(raw_call_s) * 1000,
            "state_cpu_ms_per_1k": del_cpu / total * 1e6,
            "max_txn_ops": max_txn_ops or MAX_TXN_OPS,
            "txns_in_flight": in_flight or WriterConfig.delete_txns_in_flight,
            "raw_txns_in_flight": 1,
        }
        assert total == n and left.count == 0, (total, left.count)
        await client.close()
        await channel.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        etcd.stop()
    w = max(len(r[0]) for r in rows)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    say(f"\nstate bench, N = {n:,} (bench process maxrss {maxrss} MiB)")
    say(f"{'measure'.ljust(w)}  {'value':>12}  notes")
    for name, value, note in rows:
        say(f"{name.ljust(w)}  {value:>12}  {note}")
    if as_json:
        print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--writes", type=int, default=2000)
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object of the figures (the table goes to stderr)")
    ap.add_argument("--max-txn-ops", type=int, default=0,
                    help="start etcd with this --max-txn-ops (0: etcd's default, 128)")
    ap.add_argument("--delete-txns-in-flight", type=int, default=0,
                    help="the state service's --state-delete-txns-in-flight (0: its default)")
    ap.add_argument("--measure-cache", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure_cache:
        asyncio.run(measure_cache(args.measure_cache))
    else:
        asyncio.run(main(args.n, args.writes, args.json, args.max_txn_ops,
                         args.delete_txns_in_flight))

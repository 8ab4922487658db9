"""Eval broker benchmark: throughput, Dequeue latency, failover time.

Starts a private etcd, one state service and two broker replicas as
separate processes (``drover serve``), then, from this process over gRPC:

1. evaluations/s through enqueue (UpsertEvaluations to the state service,
   batches of 100) -> Dequeue -> Ack, with 1, 4 and 16 workers: first one
   evaluation per Dequeue and Ack call, then batched (Dequeue with
   ``max_evaluations``, one AckBatch per Dequeue);
2. Dequeue latency p50/p99 with work ready (one worker, sequential);
   each row also shows the CPU each process used (% of one core; the
   machine's cores are shared by all of them, so a sum near 100 x cpus
   means the box, not one component, is the limit);
3. failover time with N pending evaluations: SIGTERM the leader (graceful
   resign), time until the first successful Dequeue on the other replica;
   then the same with the leader killed (SIGKILL), where noticing takes
   the session TTL and the rest is the new leader's establish.

Usage: ``.venv/bin/python bench/broker_bench.py [--evals 3000]
[--batch 128] [--backlogs 10000,100000] [--etcd-max-txn-ops 1024]``
(the last: as deployed, etcd and the services at 1024; the etcd baseline
then uses txns of 1023, and ``ratio_to_ceiling_127`` is against txns of
127). Goals: >= 5,000 evals/s, p99 <= 5 ms, failover <= 1 s regardless of
backlog.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.coord.kv import Put
from drover.dev.etcd import EtcdServer
from drover.dev.ports import free_port, wait_for_port
from drover.state.app import EtcdStore

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
#: Session TTL (seconds) of every service: a killed leader is noticed after it.
TTL = 2
#: Bound of one throughput row (seconds): a stalled pipeline fails the bench.
ROW_TIMEOUT_S = 300


def spawn(service: str, etcd: str, prefix: str, port: int, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "serve", service, "--etcd", etcd,
         "--etcd-prefix", prefix, "--listen", f"127.0.0.1:{port}", "--session-ttl", str(TTL),
         "--log-level", "WARNING", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def cpu_seconds(pid: int) -> float:
    """CPU time of process ``pid`` so far, in nanosecond resolution.

    Sums each live thread's ``schedstat`` run time: ``/proc/PID/stat`` counts
    in clock ticks (10 ms), and a row of 3,000 evaluations at ~0.07 ms each
    is only ~20 ticks of state CPU, too coarse to tell 0.065 from 0.070.
    A thread that exits during a row loses its time (gRPC's threads live as
    long as the process); without schedstat, falls back to ticks.
    """
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue  # the thread ended between listing and reading
        return total / 1e9
    except OSError:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def evals(run: str, n: int) -> list[Evaluation]:
    return [Evaluation(id=f"{run}-{i}", namespace="default", priority=50, type="service",
                       job_id=f"{run}-job{i}", status=PENDING) for i in range(n)]


async def enqueue(state: state_pb2_grpc.StateServiceStub, items: list[Evaluation],
                  batch: int = 100, parallel: int = 4) -> None:
    chunks = [items[i:i + batch] for i in range(0, len(items), batch)]
    sem = asyncio.Semaphore(parallel)

    async def one(chunk: list[Evaluation]) -> None:
        async with sem:
            await state.UpsertEvaluations(
                state_pb2.UpsertEvaluationsRequest(evaluations=chunk), timeout=60)

    await asyncio.gather(*(one(c) for c in chunks))


async def etcd_baseline(endpoint: str, n: int, etcd_pid: int,
                        txn_puts: int = 127) -> tuple[float, float, float, float, int]:
    """What etcd alone allows, in this run: (evals/s, range p50 ms, p99 ms,
    etcd's CPU ms per evaluation written, the puts per txn it used).

    evals/s writes each evaluation twice (pending, then its ack) as the
    pipeline does, in txns of ``txn_puts`` puts plus a marker (127: etcd's
    default --max-txn-ops), four txns in flight; the ranges are sequential
    one-key linearizable reads.
    """
    channel = grpc.aio.insecure_channel(endpoint)
    try:
        store = EtcdStore(channel, timeout=60, max_txn_ops=max(128, txn_puts + 1))
    except TypeError:  # a tree from before the store was told etcd's cap (A/B runs)
        store, txn_puts = EtcdStore(channel, timeout=60), 127
    body = evals("base", 1)[0].SerializeToString()
    run = uuid.uuid4().hex[:6]
    keys = [f"/baseline/{run}/{i}".encode() for i in range(n)]
    chunks = [keys[i:i + txn_puts] for i in range(0, n, txn_puts)]
    sem = asyncio.Semaphore(4)

    async def write(chunk: list[bytes]) -> None:
        async with sem:
            await store.txn([], [*(Put(k, body) for k in chunk), Put(b"/baseline/m", b"")])

    cpu0, t0 = cpu_seconds(etcd_pid), time.perf_counter()
    for _ in range(2):
        await asyncio.gather(*(write(c) for c in chunks))
    rate = n / (time.perf_counter() - t0)
    etcd_ms = 1e3 * (cpu_seconds(etcd_pid) - cpu0) / n
    samples = []
    for i in range(1000):
        t = time.perf_counter()
        await store.range(keys[i % n], b"")
        samples.append(time.perf_counter() - t)
    samples.sort()
    await channel.close()
    return (rate, statistics.median(samples) * 1e3,
            samples[int(len(samples) * 0.99) - 1] * 1e3, etcd_ms, txn_puts)


async def stats(stub: broker_pb2_grpc.EvalBrokerServiceStub) -> broker_pb2.BrokerStats:
    resp = await stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(), timeout=10)
    return resp.stats


async def leader_of(stubs: dict[str, broker_pb2_grpc.EvalBrokerServiceStub]) -> str:
    while True:
        for addr, stub in stubs.items():
            try:
                if (await stats(stub)).enabled:
                    return addr
            except grpc.aio.AioRpcError:
                pass
        await asyncio.sleep(0.05)


def dq(timeout: float = 1.0, batch: int = 1) -> broker_pb2.DequeueRequest:
    req = broker_pb2.DequeueRequest(schedulers=["service"], max_evaluations=batch)
    req.timeout.FromMilliseconds(int(timeout * 1000))
    return req


async def throughput(state: state_pb2_grpc.StateServiceStub,
                     broker: broker_pb2_grpc.EvalBrokerServiceStub, workers: int,
                     n: int, batch: int) -> float:
    """evals/s; each worker takes up to ``batch`` per Dequeue (1: Dequeue + Ack
    per evaluation, else one AckBatch per Dequeue)."""
    run = uuid.uuid4().hex[:6]
    done = 0
    finished = asyncio.Event()

    async def worker() -> None:
        nonlocal done
        while not finished.is_set():
            got = await broker.Dequeue(dq(0.5, batch), timeout=5)
            if not got.token:
                continue
            if batch == 1:
                await broker.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id,
                                                       token=got.token), timeout=10)
                done += 1
            else:
                acks = [broker_pb2.AckRequest(eval_id=got.evaluation.id, token=got.token)]
                acks += [broker_pb2.AckRequest(eval_id=d.evaluation.id, token=d.token)
                         for d in got.additional]
                resp = await broker.AckBatch(broker_pb2.AckBatchRequest(acks=acks), timeout=10)
                failed = [o for o in resp.outcomes if o.code]
                if failed:
                    raise RuntimeError(f"ack failed: {failed[0]}")
                done += len(acks)
            if done >= n:
                finished.set()

    start = time.perf_counter()
    pool = [asyncio.create_task(worker()) for _ in range(workers)]
    done_waiter = asyncio.create_task(finished.wait())
    try:
        await enqueue(state, evals(run, n))
        # A worker that fails (an RPC error, a refused ack) must end the row
        # with its error, not leave it waiting for evaluations nobody acks.
        async with asyncio.timeout(ROW_TIMEOUT_S):
            await asyncio.wait([done_waiter, *pool], return_when=asyncio.FIRST_COMPLETED)
        for task in pool:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise RuntimeError(f"a worker failed after {done} of {n} acks") \
                    from task.exception()
        elapsed = time.perf_counter() - start
    finally:
        for pending in (*pool, done_waiter):
            pending.cancel()
        await asyncio.gather(*pool, done_waiter, return_exceptions=True)
    return n / elapsed


async def dequeue_latency(state: state_pb2_grpc.StateServiceStub,
                          broker: broker_pb2_grpc.EvalBrokerServiceStub,
                          n: int) -> tuple[float, float]:
    await enqueue(state, evals(uuid.uuid4().hex[:6], n))
    while (await stats(broker)).total_ready < n:  # noqa: ASYNC110 (polls an RPC)
        await asyncio.sleep(0.05)
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        got = await broker.Dequeue(dq(), timeout=5)
        samples.append(time.perf_counter() - t)
        await broker.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id, token=got.token))
    samples.sort()
    return statistics.median(samples) * 1e3, samples[int(len(samples) * 0.99) - 1] * 1e3


async def first_dequeue(stub: broker_pb2_grpc.EvalBrokerServiceStub, t0: float) -> float:
    """Seconds from ``t0`` until ``stub`` hands out an evaluation."""
    while True:
        try:
            got = await stub.Dequeue(dq(0.2), timeout=5)
            if got.token:
                return time.perf_counter() - t0
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.005)


async def standby_holds(stub: broker_pb2_grpc.EvalBrokerServiceStub, n: int) -> None:
    """Wait until a replica's hot standby holds ``n`` evaluations."""
    while True:
        try:
            s = await stats(stub)
            if s.total_ready + s.total_pending + s.total_unacked >= n:
                return
        except grpc.aio.AioRpcError:
            pass
        await asyncio.sleep(0.1)


async def failover(etcd: str, backlog: int) -> tuple[float, float, float]:
    """(graceful, kill -9, load) seconds: SIGTERM the leader and time the first
    Dequeue on the follower; start a fresh replica, let it catch up as the
    standby, then SIGKILL the leader (no resign: detection waits out the
    session TTL) and time again."""
    prefix = f"/bench{uuid.uuid4().hex[:8]}/drover"
    sport = free_port()
    procs = {"state": spawn("state", etcd, prefix, sport)}
    assert wait_for_port("127.0.0.1", sport, 60)
    state_ch = grpc.aio.insecure_channel(f"127.0.0.1:{sport}")
    state = state_pb2_grpc.StateServiceStub(state_ch)
    load_start = time.perf_counter()
    await enqueue(state, evals("f", backlog), batch=120, parallel=4)
    load = time.perf_counter() - load_start
    channels: dict[str, grpc.aio.Channel] = {}
    stubs: dict[str, broker_pb2_grpc.EvalBrokerServiceStub] = {}

    def add_broker() -> str:
        port = free_port()
        address = f"127.0.0.1:{port}"
        procs[address] = spawn("broker", etcd, prefix, port,
                               "--state-address", f"127.0.0.1:{sport}")
        channels[address] = grpc.aio.insecure_channel(address)
        stubs[address] = broker_pb2_grpc.EvalBrokerServiceStub(channels[address])
        assert wait_for_port("127.0.0.1", port, 60)
        return address

    try:
        for _ in range(2):
            add_broker()
        leader = await leader_of(stubs)
        follower = next(a for a in stubs if a != leader)
        for addr in stubs:
            await standby_holds(stubs[addr], backlog)
        t0 = time.perf_counter()
        procs[leader].send_signal(signal.SIGTERM)
        graceful = await first_dequeue(stubs[follower], t0)
        procs[leader].wait(15)
        del stubs[leader]
        fresh = add_broker()
        await standby_holds(stubs[fresh], backlog)
        t0 = time.perf_counter()
        procs[follower].kill()
        killed = await first_dequeue(stubs[fresh], t0)
        return graceful, killed, load
    finally:
        for ch in channels.values():
            await ch.close()
        await state_ch.close()
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
        for p in procs.values():
            p.wait(15)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evals", type=int, default=3000,
                        help="evaluations per throughput row")
    parser.add_argument("--batch", type=int, default=128,
                        help="max_evaluations per Dequeue in the batched rows")
    parser.add_argument("--backlogs", default="10000,100000")
    parser.add_argument("--batched-only", action="store_true",
                        help="skip the one-evaluation-per-call rows (they take ~25 s)")
    parser.add_argument("--etcd-max-txn-ops", type=int, default=0,
                        help="run etcd with this --max-txn-ops and tell the state service and "
                             "the brokers (as the manifests and `drover dev` do with 1024); "
                             "the etcd baseline then writes txns of this size less one too. "
                             "Default: etcd's own 128")
    parser.add_argument("--untold", action="store_true",
                        help="with --etcd-max-txn-ops: do not tell the services (code from "
                             "before the --broker-max-txn-ops flag, run as its deployment did)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object of the figures (the table goes to stderr)")
    args = parser.parse_args()
    out: dict[str, Any] = {"evals": args.evals}
    # In --json mode the human table goes to stderr, so stdout is one object.
    say = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print
    ops = args.etcd_max_txn_ops
    told: tuple[str, ...] = ()
    if ops:
        if not args.untold:
            told = ("--state-max-txn-ops", str(ops), "--broker-max-txn-ops", str(ops))
        out["etcd_max_txn_ops"] = ops
        out["services_told_max_txn_ops"] = not args.untold
    etcd = EtcdServer(extra_args=("--max-txn-ops", str(ops)) if ops else ()).start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        prefix = f"/bench{uuid.uuid4().hex[:8]}/drover"
        sport, b1, b2 = free_port(), free_port(), free_port()
        procs.append(spawn("state", etcd.endpoint, prefix, sport, *told[:2]))
        assert wait_for_port("127.0.0.1", sport, 60)
        for port in (b1, b2):
            procs.append(spawn("broker", etcd.endpoint, prefix, port,
                               "--state-address", f"127.0.0.1:{sport}", *told[2:]))
        for port in (b1, b2):
            assert wait_for_port("127.0.0.1", port, 60)
        state_ch = grpc.aio.insecure_channel(f"127.0.0.1:{sport}")
        state = state_pb2_grpc.StateServiceStub(state_ch)
        channels = {f"127.0.0.1:{p}": grpc.aio.insecure_channel(f"127.0.0.1:{p}")
                    for p in (b1, b2)}
        stubs = {a: broker_pb2_grpc.EvalBrokerServiceStub(c) for a, c in channels.items()}
        lead_addr = await leader_of(stubs)
        leader = stubs[lead_addr]
        say(f"eval broker benchmark (cpus={os.cpu_count()}; etcd, state, 2 brokers and the "
              "client as separate processes)")
        say(f"{'measure':<48} {'result':>14}")
        puts = ops - 1 if ops else 127
        base_rate, base_p50, base_p99, base_etcd_ms, puts = await etcd_baseline(
            etcd.endpoint, args.evals, etcd.pid, puts)
        say(f"{f'etcd baseline: 2 puts per eval, txns of {puts}':<48} {base_rate:>10.0f} /s   "
              "(the store's ceiling for this pipeline)")
        if puts != 127:
            # The ceiling at etcd's default txn size too (earlier runs' figure).
            rate_127 = (await etcd_baseline(etcd.endpoint, args.evals, etcd.pid, 127))[0]
            out["etcd_baseline_127"] = {"evals_per_s": rate_127}
            say(f"{'etcd baseline: same, txns of 127':<48} {rate_127:>10.0f} /s")
        say(f"{'etcd baseline: one-key read, p50 / p99':<48} {base_p50:>11.2f} ms   "
              f"p99 {base_p99:.2f} ms (Dequeue reads no etcd)")
        out["etcd_baseline"] = {"evals_per_s": base_rate, "read_p50_ms": base_p50,
                                "read_p99_ms": base_p99, "etcd_cpu_ms_per_eval": base_etcd_ms,
                                "txn_puts": puts}
        by_addr = {f"127.0.0.1:{b1}": procs[1].pid, f"127.0.0.1:{b2}": procs[2].pid}
        follower_pid = next(p for a, p in by_addr.items() if a != lead_addr)
        pids = {"etcd": etcd.pid, "state": procs[0].pid, "leader": by_addr[lead_addr],
                "follower": follower_pid, "client": os.getpid()}
        for batch in ((args.batch,) if args.batched_only else (1, args.batch)):
            label = "Dequeue+Ack" if batch == 1 else f"batches of {batch}"
            for workers in (1, 4, 16):
                before = {k: cpu_seconds(p) for k, p in pids.items()}
                t0 = time.perf_counter()
                rate = await throughput(state, leader, workers, args.evals, batch)
                took = time.perf_counter() - t0
                cpu = {k: 100 * (cpu_seconds(p) - before[k]) / took for k, p in pids.items()}
                used = " ".join(f"{k} {v:.0f}" for k, v in cpu.items())
                row = out.setdefault("single" if batch == 1 else "batched", {})
                assert isinstance(row, dict)
                row[f"evals_per_s_{workers}w"] = rate
                row[f"state_cpu_pct_{workers}w"] = cpu["state"]
                # State CPU per evaluation acked (ms): the "halved" figure.
                row[f"state_cpu_ms_per_eval_{workers}w"] = (
                    10 * cpu["state"] * took / args.evals)
                # Every process's CPU per evaluation (ms): throughput on a
                # shared box rises only if their sum falls.
                row[f"cpu_ms_per_eval_{workers}w"] = {
                    k: 10 * v * took / args.evals for k, v in cpu.items()}
                say(f"{f'enqueue->{label}, {workers} workers':<48} "
                      f"{rate:>10.0f} /s   (cpu %: {used})")
        for name in ("single", "batched"):
            if name not in out:
                continue
            row = out[name]
            assert isinstance(row, dict)
            best = max((1, 4, 16), key=lambda w: row[f"evals_per_s_{w}w"])
            row["best_workers"] = best
            row["evals_per_s"] = row[f"evals_per_s_{best}w"]
            row["state_cpu_ms_per_eval"] = row[f"state_cpu_ms_per_eval_{best}w"]
            row["cpu_ms_per_eval"] = row[f"cpu_ms_per_eval_{best}w"]
            row["etcd_ceiling_evals_per_s"] = base_rate
            row["ratio_to_ceiling"] = row["evals_per_s"] / base_rate
            if "etcd_baseline_127" in out:
                row["ratio_to_ceiling_127"] = (
                    row["evals_per_s"] / out["etcd_baseline_127"]["evals_per_s"])
        p50, p99 = await dequeue_latency(state, leader, 1000)
        out["dequeue"] = {"p50_ms": p50, "p99_ms": p99}
        say(f"{'Dequeue latency with work ready, p50':<48} {p50:>11.2f} ms")
        say(f"{'Dequeue latency with work ready, p99':<48} {p99:>11.2f} ms")
        for ch in (*channels.values(), state_ch):
            await ch.close()
        for backlog in (int(b) for b in args.backlogs.split(",") if b):
            graceful, killed, load = await failover(etcd.endpoint, backlog)
            out[f"failover_{backlog}"] = {"graceful_ms": graceful * 1e3,
                                          "killed_ms": killed * 1e3, "load_s": load}
            say(f"{f'failover to first Dequeue, {backlog} pending':<48} "
                  f"{graceful * 1e3:>11.0f} ms   (leader resigns on SIGTERM; loading the "
                  f"backlog took {load:.0f} s)")
            say(f"{f'  same, leader killed (-9), session TTL {TTL} s':<48} "
                  f"{killed * 1e3:>11.0f} ms   (mostly the lease running out: <= TTL "
                  f"after the last renewal)")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(15)
        etcd.stop()
    if args.json:
        print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main())

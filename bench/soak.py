"""The soak: `drover dev` for N minutes under a steady workload and a fault
every minute, then judged (``make soak``; ``--minutes 10`` in CI's slow step).

The cluster: three etcd members (periodic auto-compaction on, as the
manifests), two replicas of every service, the worker and 200 simulated
nodes (:class:`drover.dev.supervisor.Supervisor`, which restarts what
dies). The workload, through both proxies: service jobs rolled out with
canaries (promoted once healthy), scale changes, batch jobs, node drains,
GC passes; and recorded clients (tests/linearizability: jobs as
compare-and-set registers, evaluations as create, Ack transitions and
reads) whose history is checked at the end.

A fault every ``--fault-every`` seconds, drawn by seed (bench/_soak_faults.py):
kill -9 of any process (etcd members included; the supervisor restarts
it), SIGSTOP of any drover process for 8-15 s, an etcd member frozen as
long, an etcd member partitioned from its peers and clients, a state
replica cut from etcd (nftables, in the soak's own network namespace: as
root the soak re-executes itself in one).

When the time is up the workload stops and drains: faults healed, nodes
back in service, then up to a progress deadline and a minute for every
deployment to end (the soak's jobs set a progress deadline, as Nomad's
job specs do by default; a deployment still running after it is a bug).

Recorded every 10 s and judged at the end: see bench/_soak_report.py
(why the slope over the last half is a sound judge of a 10-minute run, and
why etcd is judged on its DB, keys and watchers rather than its RSS).
Results: bench/results/soak.md and its PNGs (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the linearizability checker and its clients

from _soak_faults import KINDS, Faults, enter_own_netns, processes  # noqa: E402
from _soak_report import Sample, SoakRecord, judge_flat, write  # noqa: E402
from linearizability.recorded_load import RecordedClients  # noqa: E402

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc  # noqa: E402
from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc  # noqa: E402
from drover.api.state.v1 import state_pb2, state_pb2_grpc  # noqa: E402
from drover.api.types.v1 import deployment_pb2, job_pb2, node_pb2  # noqa: E402
from drover.dev.supervisor import SERVICES, DevLayout, Supervisor  # noqa: E402
from drover.rpc.failover import FailoverChannel  # noqa: E402
from drover.tasks import cancel_and_wait  # noqa: E402

SAMPLE_EVERY = 10.0
ACTIVE = 'status == "running" || status == "paused"'
#: The soak's jobs' progress deadline (Nomad's default is 10m; shorter
#: here so that a stuck deployment fails within a short run's drain).
PROGRESS_DEADLINE = 90
#: The services' garbage collection in the soak (``drover serve --gc-*``).
GC_ENV = {"DROVER_GC_INTERVAL": "30s", "DROVER_GC_EVAL_THRESHOLD": "2m",
          "DROVER_GC_DEPLOYMENT_THRESHOLD": "2m", "DROVER_GC_JOB_THRESHOLD": "2m"}


class Recorder(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Every workload call: (t, method, seconds, code)."""

    def __init__(self, rec: SoakRecord, t0: float) -> None:
        self.rec, self.t0 = rec, t0
        #: Times a write (RegisterJob, ScaleJob) succeeded; a Dequeue handed out work.
        self.writes: list[float] = []
        self.deliveries: list[float] = []

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        name = method.rsplit("/", 1)[-1]
        start = time.monotonic()
        code = "OK"
        try:
            call = await continuation(details, request)
            resp = await call
        except grpc.aio.AioRpcError as e:
            code = e.code().name
            raise
        finally:
            self.rec.calls.append((start - self.t0, name, time.monotonic() - start, code))
        now = time.monotonic() - self.t0
        if name in ("RegisterJob", "ScaleJob"):
            self.writes.append(now)
        elif name == "Dequeue" and getattr(resp, "token", ""):
            self.deliveries.append(now)
        return resp


def _service_job(i: int, image: str, count: int, canary: bool) -> job_pb2.Job:
    task = job_pb2.Task(name="server", driver="docker", config={"image": image},
                        resources=job_pb2.Resources(cpu=100, memory_mb=64))
    update = job_pb2.UpdateStrategy(max_parallel=1, canary=1 if canary else 0)
    update.min_healthy_time.FromMilliseconds(200)
    update.healthy_deadline.FromSeconds(PROGRESS_DEADLINE - 30)
    update.progress_deadline.FromSeconds(PROGRESS_DEADLINE)
    group = job_pb2.TaskGroup(name="web", count=count, tasks=[task], update=update)
    return job_pb2.Job(id=f"svc-{i}", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                       datacenters=["dc1"], task_groups=[group])


def _batch_job(n: int) -> job_pb2.Job:
    task = job_pb2.Task(name="run", driver="docker", config={"image": "batch:1"},
                        resources=job_pb2.Resources(cpu=100, memory_mb=64))
    return job_pb2.Job(id=f"batch-{n}", namespace="default", type=job_pb2.JOB_TYPE_BATCH,
                       datacenters=["dc1"],
                       task_groups=[job_pb2.TaskGroup(name="b", count=2, tasks=[task])])


class Workload:
    def __init__(self, ch: Any, rng: random.Random, services: int = 8) -> None:
        self.state = state_pb2_grpc.StateServiceStub(ch)
        self.watcher = deployments_pb2_grpc.DeploymentWatcherServiceStub(ch)
        self.broker = broker_pb2_grpc.EvalBrokerServiceStub(ch)
        self.rng = rng
        self.services = services
        self.counts = {i: 3 for i in range(services)}
        self.versions = dict.fromkeys(range(services), 0)
        self.registered: set[str] = set()
        #: Batch jobs seen dead (done): garbage collection may take them.
        self.done: set[str] = set()
        self.batches = 0
        self.draining: list[str] = []
        self.running = True

    async def _quiet(self, coro: Any) -> Any:
        with contextlib.suppress(grpc.aio.AioRpcError):
            return await coro
        return None

    async def _register(self, job: job_pb2.Job) -> None:
        if await self._quiet(self.state.RegisterJob(
                state_pb2.RegisterJobRequest(job=job), timeout=10)) is not None:
            self.registered.add(job.id)

    async def setup(self) -> None:
        for i in range(self.services):
            await self._register(_service_job(i, "web:0", 3, canary=i % 2 == 0))

    async def step(self) -> None:
        r = self.rng.random()
        i = self.rng.randrange(self.services)
        if r < 0.3:  # a rollout (canaries on every other job)
            self.versions[i] += 1
            await self._register(_service_job(i, f"web:{self.versions[i]}", self.counts[i],
                                              canary=i % 2 == 0))
        elif r < 0.5:
            self.counts[i] = self.rng.randint(2, 5)
            await self._quiet(self.state.ScaleJob(state_pb2.ScaleJobRequest(
                namespace="default", id=f"svc-{i}", group="web", count=self.counts[i],
                message="soak"), timeout=10))
        elif r < 0.8:
            self.batches += 1
            await self._register(_batch_job(self.batches))
        elif r < 0.93:
            await self._drain_step()
        else:
            await self._quiet(self.watcher.CollectGarbage(
                deployments_pb2.CollectGarbageRequest(), timeout=30))

    async def _drain_step(self) -> None:
        if self.draining and (len(self.draining) > 2 or self.rng.random() < 0.5):
            node = self.draining.pop(0)  # back in service
            await self._quiet(self.state.UpdateNodeDrain(state_pb2.UpdateNodeDrainRequest(
                id=node, mark_eligible=True), timeout=10))
            return
        node = f"sim-{self.rng.randrange(200)}"
        strategy = node_pb2.DrainStrategy()
        strategy.deadline.FromSeconds(30)
        if await self._quiet(self.state.UpdateNodeDrain(state_pb2.UpdateNodeDrainRequest(
                id=node, drain_strategy=strategy), timeout=10)) is not None:
            self.draining.append(node)

    async def promote(self) -> None:
        """Promote every running deployment whose canaries are healthy."""
        resp = await self._quiet(self.state.ListDeployments(state_pb2.ListDeploymentsRequest(
            namespace="*", filter=ACTIVE, page_size=500), timeout=10))
        for d in resp.deployments if resp is not None else ():
            groups = d.task_groups.values()
            if d.status == deployment_pb2.DEPLOYMENT_STATUS_RUNNING and any(
                    g.desired_canaries and not g.promoted for g in groups) and all(
                    g.healthy_allocs >= g.desired_canaries for g in groups):
                await self._quiet(self.watcher.PromoteDeployment(
                    deployments_pb2.PromoteDeploymentRequest(deployment_id=d.id, all=True),
                    timeout=10))

    async def run(self) -> None:
        while self.running:
            await self.step()
            await self.check_done()
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))

    async def check_done(self) -> None:
        """Note the batch jobs now dead (a few a step, the oldest first)."""
        waiting = sorted((j for j in self.registered - self.done if j.startswith("batch-")),
                         key=lambda j: int(j.split("-")[1]))
        for job_id in waiting[:4]:
            resp = await self._quiet(self.state.GetJob(state_pb2.GetJobRequest(
                namespace="default", id=job_id), timeout=10))
            if resp is not None and resp.job.status == job_pb2.JOB_STATUS_DEAD:
                self.done.add(job_id)

    async def run_promoter(self) -> None:
        while True:
            await self.promote()
            await asyncio.sleep(2.0)

    async def undrain_all(self) -> None:
        for node in self.draining:
            await self._quiet(self.state.UpdateNodeDrain(state_pb2.UpdateNodeDrainRequest(
                id=node, mark_eligible=True), timeout=10))
        self.draining = []


def _proc_stats(pid: int) -> tuple[float, int] | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss / 1024, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


def _etcd_db(sup: Supervisor) -> tuple[float, float, int, int]:
    """etcd's DB size and the part in use (MiB), its live keys and its
    watchers (each the largest member's)."""
    total = in_use = 0.0
    keys = watchers = 0
    assert sup.cluster is not None
    for m in sup.cluster.members:
        try:
            with urllib.request.urlopen(m.metrics_url, timeout=2) as r:
                text = r.read().decode()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "etcd_mvcc_db_total_size_in_bytes":
                total = max(total, float(value) / 2**20)
            elif name == "etcd_mvcc_db_total_size_in_use_in_bytes":
                in_use = max(in_use, float(value) / 2**20)
            elif name == "etcd_debugging_mvcc_keys_total":
                keys = max(keys, int(float(value)))
            elif name == "etcd_debugging_mvcc_watcher_total":
                watchers = max(watchers, int(float(value)))
    return total, in_use, keys, watchers


async def _in_flight(wl: Workload) -> tuple[int, int]:
    evals = deps = 0
    with contextlib.suppress(grpc.aio.AioRpcError):
        st = (await wl.broker.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(),
                                             timeout=5)).stats
        evals = (st.total_ready + st.total_unacked + st.total_pending + st.total_waiting
                 + st.total_blocked)
    with contextlib.suppress(grpc.aio.AioRpcError):
        token = ""
        while True:
            resp = await wl.state.ListDeployments(state_pb2.ListDeploymentsRequest(
                namespace="*", filter=ACTIVE, page_size=500, page_token=token), timeout=10)
            deps += len(resp.deployments)
            token = resp.next_page_token
            if not token:
                break
    return evals, deps


async def sampler(sup: Supervisor, wl: Workload, rec: SoakRecord, t0: float) -> None:
    seen = 0
    while True:
        procs = processes(sup)
        stats = {n: s for n, pid in procs.items() if (s := _proc_stats(pid)) is not None}
        now = time.monotonic() - t0
        window: dict[str, list[float]] = {}
        for t, method, seconds, _ in rec.calls[seen:]:
            if t <= now:
                window.setdefault(method, []).append(seconds * 1000)
        seen = len(rec.calls)
        latency = {m: (sorted(v)[len(v) // 2], sorted(v)[min(len(v) - 1, int(0.99 * len(v)))],
                       len(v)) for m, v in window.items()}
        db, in_use, keys, watchers = await asyncio.to_thread(_etcd_db, sup)
        evals, deps = await _in_flight(wl)
        rec.samples.append(Sample(now, {n: s[0] for n, s in stats.items()},
                                  {n: s[1] for n, s in stats.items()},
                                  {n: procs[n] for n in stats}, db, in_use, latency, evals, deps,
                                  keys, watchers))
        await asyncio.sleep(SAMPLE_EVERY)


def _gap(times: list[float], start: float, end: float) -> float:
    inside = [t for t in times if start <= t <= end]
    edges = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(edges))


async def fault_loop(faults: Faults, rec: SoakRecord, t0: float, opts: Options) -> None:
    """A fault at every ``opts.every`` seconds that leaves 20 s before the
    end; one that cannot be injected is a problem (the soak goes on)."""
    n = 1
    kinds = tuple(k for k in faults.kinds() if not opts.kinds or k in opts.kinds)
    while n * opts.every + 20 < opts.minutes * 60:
        await asyncio.sleep(max(0.0, t0 + n * opts.every - time.monotonic()))
        kind = faults.rng.choice(kinds)
        try:
            rec.faults.append(await faults.inject(t0, kind))
        except (OSError, subprocess.CalledProcessError, IndexError) as e:
            faults.heal()
            rec.problems.append(f"fault {n} ({kind}) not injected: {e}")
        n += 1


async def supervise(sup: Supervisor) -> None:
    while True:
        await asyncio.to_thread(sup.supervise)
        await asyncio.sleep(0.5)


async def _until(pred: Any, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        with contextlib.suppress(grpc.aio.AioRpcError):
            if await pred():
                return True
        await asyncio.sleep(1.0)
    return False


@dataclass(frozen=True)
class Options:
    minutes: float
    seed: int
    port_offset: int
    #: Seconds between faults.
    every: float
    nodes: int
    retention: str
    own_netns: bool
    #: Draw only these kinds (all when empty).
    kinds: tuple[str, ...] = ()


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


async def soak(opts: Options) -> SoakRecord:
    rng = random.Random(opts.seed)
    rec = SoakRecord(opts.minutes, opts.seed)
    rec.notes.append(f"etcd auto-compaction: periodic, retention {opts.retention}")
    rec.notes.append(f"machine: {os.cpu_count()} cores shared with other work; load average "
                     f"(1, 5, 15 min) at the start {_load()}")
    # Garbage collection as an operator would tune it for a steady state:
    # what the workload finishes goes within minutes (Nomad's thresholds are
    # hours), so the live set, the DB in use and the caches can level off.
    os.environ.update(GC_ENV)
    rec.notes.append("garbage collection every " + GC_ENV["DROVER_GC_INTERVAL"]
                     + ", evaluations, deployments and jobs done for "
                     + GC_ENV["DROVER_GC_EVAL_THRESHOLD"] + " collected")
    sup = Supervisor(layout=DevLayout().shifted(opts.port_offset), etcd_members=3,
                     nodes=opts.nodes, replicas=dict.fromkeys(SERVICES, 2),
                     compaction_retention=opts.retention,
                     log=lambda line: print(f"dev: {line}", flush=True))
    faults = Faults(sup, random.Random(rng.random()), opts.own_netns)
    if not opts.own_netns:
        rec.notes.append("the cuts (etcd_partition, state_cut) not drawn: the soak needs root, "
                         "nft and unshare for its own network namespace")
    await asyncio.to_thread(sup.start)
    t0 = time.monotonic()
    recorder = Recorder(rec, t0)
    proxies = [sup.layout.address("proxy", r) for r in range(2)]
    ch = FailoverChannel(proxies)
    ch_rec = grpc.aio.insecure_channel(proxies[0], interceptors=[recorder])
    tasks: list[asyncio.Task[Any]] = [asyncio.create_task(supervise(sup))]
    try:
        # The workload's own calls through both proxies (failover), the recorded
        # clients' through the first (their times are the write/delivery gaps).
        wl = Workload(ch, random.Random(rng.random()))
        await wl.setup()
        lin = RecordedClients(random.Random(rng.random()))
        lin.start(ch_rec, running=lambda: wl.running)
        sampling = asyncio.create_task(sampler(sup, wl, rec, t0))
        tasks += [sampling, *(asyncio.create_task(c) for c in (
            wl.run(), wl.run_promoter(), fault_loop(faults, rec, t0, opts)))]
        await asyncio.sleep(max(0.0, opts.minutes * 60 - (time.monotonic() - t0)))
        # The samples (and the slopes over their last half) end with the
        # workload: an idle drain would flatten them.
        await cancel_and_wait([sampling], within=15.0, what="soak sampler")
        rec.notes.append(f"load average at the end of the workload {_load()}")
        faults.heal()
        wl.running = False
        await lin.stop()
        await wl.undrain_all()
        for f in rec.faults:
            f.write_gap = _gap(recorder.writes, f.start, f.end + 5)
            f.delivery_gap = _gap(recorder.deliveries, f.start, f.end + 5)
        await _judge(wl, lin, rec)
    finally:
        faults.close()
        await cancel_and_wait(tasks, within=15.0, what="soak")
        await ch.close()
        await ch_rec.close()
        await asyncio.to_thread(sup.stop)
    rec.problems += judge_flat(rec)
    return rec


async def _active(wl: Workload) -> list[str]:
    """The deployments still active, each with its groups' progress."""
    resp = await wl.state.ListDeployments(state_pb2.ListDeploymentsRequest(
        namespace="*", filter=ACTIVE, page_size=500), timeout=10)
    def group(n: str, g: deployment_pb2.DeploymentGroupState) -> str:
        by = (g.require_progress_by.ToJsonString() if g.HasField("require_progress_by")
              else "none")
        return (f"{n}: placed {g.placed_allocs}/{g.desired_total}, healthy {g.healthy_allocs}, "
                f"canaries {g.desired_canaries}{' promoted' if g.promoted else ''}, "
                f"progress by {by}")

    return [f"{d.id[:8]} ({d.job_id} v{d.job_version}, "
            f"{deployment_pb2.DeploymentStatus.Name(d.status)}: {d.status_description}; "
            + ", ".join(group(n, g) for n, g in d.task_groups.items()) + ")"
            for d in resp.deployments]


async def _judge(wl: Workload, lin: RecordedClients, rec: SoakRecord) -> None:
    async def terminal() -> bool:
        resp = await wl.state.ListDeployments(state_pb2.ListDeploymentsRequest(
            namespace="*", filter=ACTIVE, page_size=500), timeout=10)
        return not resp.deployments

    drain = PROGRESS_DEADLINE + 60
    start = time.monotonic()
    if not await _until(terminal, drain):
        rec.problems.append(f"deployments still active {drain} s after the workload stopped: "
                            + "; ".join(await _active(wl)))
    else:
        rec.notes.append(f"drain: every deployment terminal {time.monotonic() - start:.0f} s "
                         "after the workload stopped")
    jobs: set[str] = set()
    token = ""
    while True:
        resp = await wl.state.ListJobs(state_pb2.ListJobsRequest(
            namespace="*", page_size=1000, page_token=token), timeout=30)
        jobs |= {j.id for j in resp.jobs}
        token = resp.next_page_token
        if not token:
            break
    # Gone and never seen done: lost (a done batch job may be collected).
    lost = sorted(wl.registered - jobs - wl.done)
    rec.problems += [f"job {j} registered (OK) but gone" for j in lost]
    problems, figures = lin.judge()
    rec.problems += problems
    rec.notes += [f.line() for f in figures]
    rec.notes.append(f"workload: {len(wl.registered)} jobs registered, {wl.batches} batch jobs "
                     f"({len(wl.done)} seen done, {len(wl.done - jobs)} of them collected)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=int(os.environ.get("DROVER_SOAK_SEED", "41")))
    p.add_argument("--port-offset", type=int, default=8000)
    p.add_argument("--fault-every", type=float, default=60.0, help="seconds between faults")
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--compaction-retention", default="",
                   help="etcd's auto-compaction retention (default: a sixth of the run, at "
                        "least 1m, so its window fills in the first half and the DB is "
                        "judged flat over the second; drover dev's default is 1h)")
    p.add_argument("--faults", default="",
                   help=f"draw only these kinds (comma-separated: {', '.join(KINDS)})")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--stem", default="soak")
    p.add_argument("--trace-state-memory", type=Path, metavar="DIR",
                   help="trace the state replicas' allocations (tracemalloc; "
                        "bench/memtrace/sitecustomize.py) and write where their memory "
                        "goes to DIR every 5 minutes; their RSS then includes the tracing")
    a = p.parse_args()
    if a.trace_state_memory:
        a.trace_state_memory.mkdir(parents=True, exist_ok=True)
        os.environ["DROVER_MEMTRACE_DIR"] = str(a.trace_state_memory.resolve())
        os.environ["PYTHONPATH"] = os.pathsep.join(
            x for x in (str(ROOT / "bench" / "memtrace"), os.environ.get("PYTHONPATH")) if x)
    own_netns = enter_own_netns()
    retention = a.compaction_retention or f"{max(1, round(a.minutes / 6))}m"
    kinds = tuple(k for k in a.faults.split(",") if k)
    if unknown := set(kinds) - set(KINDS):
        p.error(f"unknown fault kinds {sorted(unknown)}: use {', '.join(KINDS)}")
    rec = asyncio.run(soak(Options(a.minutes, a.seed, a.port_offset, a.fault_every, a.nodes,
                                   retention, own_netns, kinds)))
    if a.trace_state_memory:
        rec.notes.append(f"the state replicas ran under tracemalloc (their RSS includes "
                         f"it); where their memory went: {a.trace_state_memory}")
    path = write(rec, a.out, a.stem)
    print(path.read_text())
    if rec.problems:
        print(f"soak FAILED: {len(rec.problems)} problems", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()

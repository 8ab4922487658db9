"""A network partition drill: drover in namespaces, one replica cut from etcd.

``drover drill partition`` (and its test) runs a small cluster on a network
of namespaces (:class:`drover.dev.netcluster.NetCluster`): one etcd member,
two state replicas, two broker replicas and a proxy, each on its own host.
A load runs from the ``client`` host through the proxy: a writer
registering a batch job every ``1/write_rate`` s, a scheduler worker and
simulated nodes. After a warm-up the drill cuts the *target* from etcd (both
ways; it still reaches and is reached by everything else): the broker leader
(``broker-leader``) or the state replica the proxy lists first (``state``),
for ``fault_seconds``, heals, lets the load settle and reports what happened
(:func:`drover.dev.netcluster.measure`): how long writes and deliveries
stopped, the calls that failed by method, code and ErrorInfo reason, and
who led the broker before and after.

Needs root, ``ip`` and ``nft`` (:func:`drover.dev.netns.available`):
:class:`DrillUnavailable` says why not, before anything starts. Everything
it made (namespaces, processes) is removed when it ends, also on failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.dev import netns
from drover.dev.netcluster import HOLD, NACK, Measured, NetCluster, Svc, measure, until
from drover.rpc.remote import error_info
from drover.sim.nodes import SimConfig, SimNodes
from drover.tasks import cancel_and_wait
from drover.worker.loop import Worker, WorkerConfig

__all__ = ["TARGETS", "CallLog", "DrillUnavailable", "PartitionConfig", "PartitionReport",
           "run_partition_drill"]

#: What the drill can cut from etcd.
TARGETS = ("broker-leader", "state")
PREFIX = "/drill/partition"


class DrillUnavailable(RuntimeError):
    """This machine cannot run the drill (not root, no ``ip`` or ``nft``)."""


@dataclass(frozen=True)
class PartitionConfig:
    target: str = "broker-leader"
    #: How long the target stays cut from etcd.
    fault_seconds: float = 5.0
    #: Load observed before the cut, and after healing.
    warmup: float = 3.0
    settle: float = 4.0
    write_rate: float = 4.0
    seed: int = 1
    #: Where the processes' logs go (None: a temporary directory, removed after).
    logs: Path | None = None

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {self.target!r}")
        if self.fault_seconds <= 0 or self.write_rate <= 0:
            raise ValueError("fault_seconds and write_rate must be positive")


@dataclass(frozen=True)
class Call:
    method: str
    start: float
    end: float
    code: str
    reason: str = ""


@dataclass(frozen=True)
class Delivery:
    eval_id: str
    end: float


@dataclass
class CallLog:
    """Every unary call the load made, and every evaluation a Dequeue handed out."""

    calls: list[Call] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)


class _Logger(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, log: CallLog) -> None:
        self.log = log

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        method = details.method.decode() if isinstance(details.method, bytes) \
            else str(details.method)
        method = method.rsplit("/", 1)[-1]
        start = time.monotonic()
        try:
            resp = await (await continuation(details, request))
        except grpc.aio.AioRpcError as e:
            info = error_info(e)
            self.log.calls.append(Call(method, start, time.monotonic(), e.code().name,
                                       info.reason if info else ""))
            raise
        end = time.monotonic()
        self.log.calls.append(Call(method, start, end, "OK"))
        if method == "Dequeue" and resp.evaluation.id:
            self.log.deliveries.extend(Delivery(d.evaluation.id, end)
                                       for d in [resp, *resp.additional])
        return resp


def _batch_job(jid: str) -> job_pb2.Job:
    return job_pb2.Job(
        id=jid, type=job_pb2.JOB_TYPE_BATCH, datacenters=["dc1"],
        task_groups=[job_pb2.TaskGroup(name="g", count=1, meta={"sim.run_for": "0.5"}, tasks=[
            job_pb2.Task(name="t", driver="sim",
                         resources=job_pb2.Resources(cpu=50, memory_mb=32))])])


@dataclass(frozen=True)
class PartitionReport:
    target: str
    #: The replica cut, and the broker leader before and after (as the proxy lists them).
    cut: str
    leader_before: str
    leader_after: str
    measured: Measured
    logs: str

    def lines(self) -> list[str]:
        m = self.measured
        failed = [f"  {k} x{n}" for k, n in sorted(m.failed.items(), key=lambda kv: -kv[1])]
        return [
            f"cut {self.cut} ({self.target}) from etcd for {m.fault_seconds:.1f}s, then healed",
            f"broker leader: {self.leader_before} before, {self.leader_after} after",
            f"writes (RegisterJob) stopped at most {m.write_gap:.1f}s, deliveries (Dequeue) "
            f"{m.delivery_gap:.1f}s, from the cut to the end of the settle time",
            f"calls: {m.calls}, failed: {sum(m.failed.values())}"
            + (" by method, code and reason:" if failed else ""),
            *failed,
            f"logs: {self.logs}",
        ]


async def _servers(ch: grpc.aio.Channel, service: str) -> list[proxy_pb2.Server]:
    resp = await proxy_pb2_grpc.ClientProxyServiceStub(ch).ListServers(
        proxy_pb2.ListServersRequest(service=service), timeout=2)
    return [s for lst in resp.lists for s in lst.servers]


async def _leader(ch: grpc.aio.Channel) -> str:
    async def find() -> str:
        return next((s.replica for s in await _servers(ch, "broker") if s.leader), "")
    return str(await until(find, 30, "a broker leader"))


class _Load:
    def __init__(self, cluster: NetCluster, proxy: Svc, cfg: PartitionConfig) -> None:
        self.cluster, self.proxy, self.cfg = cluster, proxy, cfg
        self.log = CallLog()
        self.rng = random.Random(cfg.seed)

    async def _write(self, state: state_pb2_grpc.StateServiceStub) -> None:
        n = 0
        while True:
            n += 1
            with contextlib.suppress(grpc.aio.AioRpcError):  # faults fail some: recorded
                await state.RegisterJob(state_pb2.RegisterJobRequest(
                    job=_batch_job(f"drill-{n}")), timeout=10)
            await asyncio.sleep(self.rng.uniform(0.5, 1.5) / self.cfg.write_rate)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[grpc.aio.Channel]:
        ch = self.cluster.channel(self.proxy, _Logger(self.log))
        try:
            broker = broker_pb2_grpc.EvalBrokerServiceStub(ch)

            async def broker_up() -> bool:
                r = await broker.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(), timeout=2)
                return bool(r.stats.enabled)

            await until(broker_up, 90, "a broker leader through the proxy")
            sim = SimNodes(ch, SimConfig(count=2, heartbeat=1.0))
            worker = Worker(ch, WorkerConfig(batch=4, dequeue_timeout=2.0, seed=self.cfg.seed))
            tasks = [asyncio.create_task(c) for c in (
                sim.run(), worker.run(), self._write(state_pb2_grpc.StateServiceStub(ch)))]
            try:
                yield ch
            finally:
                await cancel_and_wait(tasks, within=10.0, what="partition drill load")
        finally:
            await ch.close()


async def run_partition_drill(cfg: PartitionConfig,
                              say: Callable[[str], None] = print) -> PartitionReport:
    """Run the drill of the module docstring; ``say`` narrates it."""
    why = netns.available()
    if why:
        raise DrillUnavailable(f"the partition drill cannot run here: {why} (it needs root, "
                               "`ip` and `nft`, the Debian nftables package)")
    with contextlib.ExitStack() as stack:
        logs = cfg.logs or Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="drover-drill-")))
        logs.mkdir(parents=True, exist_ok=True)
        net = stack.enter_context(netns.Net())
        c = NetCluster(net, logs, PREFIX)
        say("starting etcd, 2 state, 2 broker replicas and a proxy, each in its own namespace")
        await asyncio.to_thread(c.start_etcd, 1)
        states = [c.serve("state", f"state-{i}") for i in range(2)]
        seeds = ",".join(s.address for s in states)
        brokers = [c.serve("broker", f"broker-{i}", "--state-address", seeds,
                           "--broker-nack-timeout", f"{NACK}s") for i in range(2)]
        proxy = c.serve("proxy", "proxy", "--hold-timeout", str(HOLD))
        await asyncio.to_thread(c.wait_serving, *states, *brokers, proxy)
        load = _Load(c, proxy, cfg)
        async with load.running() as ch:
            say(f"load running (a job every ~{1 / cfg.write_rate:.2f}s, a worker, 2 nodes); "
                f"warming up {cfg.warmup:g}s")
            await asyncio.sleep(cfg.warmup)
            before = await _leader(ch)
            if cfg.target == "broker-leader":
                cut = before
            else:
                cut = str(await until(lambda: _first_state(ch), 30, "a state replica listed"))
            say(f"cutting {cut} from etcd for {cfg.fault_seconds:g}s")
            t_cut = time.monotonic()
            for h in c.etcd_hosts:
                net.cut(c.svcs[cut].host, h)
            await asyncio.sleep(cfg.fault_seconds)
            net.heal()
            t_heal = time.monotonic()
            say(f"healed; settling {cfg.settle:g}s")
            await asyncio.sleep(cfg.settle)
            after = await _leader(ch)
        m = measure(f"{cut} cut from etcd", cfg.seed, load.log, t_cut, t_heal,
                    t_heal + cfg.settle)
        kept = str(logs) if cfg.logs else "(removed; keep them with --logs DIR)"
        return PartitionReport(cfg.target, cut, before, after, m, kept)
    raise AssertionError("unreachable")  # pragma: no cover (mypy: ExitStack may swallow)


async def _first_state(ch: grpc.aio.Channel) -> str:
    servers = await _servers(ch, "state")
    return servers[0].replica if servers else ""

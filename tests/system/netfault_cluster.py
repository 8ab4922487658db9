"""drover on a test network (drover.dev.netns), the chaos load, and what a
network fault scenario measures.

:class:`NetCluster` starts real processes, each in its own namespace on the
test bridge: etcd members (``etcd-<i>``) and `drover serve` replicas (one
host per replica, named after it), all listening on their host's address.
The test process reaches them through the ``client`` host (loopback relays,
:meth:`drover.dev.netns.Net.forward`): its in-process load (the chaos
test's workers, simulated nodes, driver, deleter and observer, recorded by
chaos_load.Recorder) is that host, and faults on it apply to the load.

:func:`measure` turns a record into the numbers the scenarios report (and
bench/results/netfault.md tabulates): the longest gap between successful
writes and between deliveries around the fault, and the failed calls by
method, code and ErrorInfo reason.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import random
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from chaos_load import Deleter, Driver, Observer, Record, Recorder, list_all
from test_chaos import overlaps, too_long

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.config import EtcdSettings
from drover.coord import EtcdKV, Keyspace, connect
from drover.dev.etcd import EtcdServer
from drover.dev.netns import Host, Net, NsProcess
from drover.rpc.channels import channel_options
from drover.sim.nodes import SimConfig, SimNodes
from drover.tasks import cancel_and_wait
from drover.worker.loop import Worker, WorkerConfig

TTL = 2
HOLD = 1.5
NACK = 8.0
PORT = 50051
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "netfault.md"


@dataclass
class Svc:
    service: str
    name: str
    host: Host
    address: str
    proc: NsProcess


@dataclass
class NetCluster:
    net: Net
    logs: Path
    prefix: str
    client: Host = field(init=False)
    etcd: list[EtcdServer] = field(default_factory=list)
    etcd_hosts: list[Host] = field(default_factory=list)
    svcs: dict[str, Svc] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client = self.net.host("client")

    def start_etcd(self, size: int) -> None:
        self.etcd_hosts = [self.net.host(f"etcd-{i}") for i in range(size)]
        self.etcd = [EtcdServer(host=h.ip, client_port=2379, peer_port=2380, metrics_port=2381,
                                name=h.name, netns=h.ns, data_dir=str(self.logs / h.name),
                                log_path=str(self.logs / f"{h.name}.log"),
                                cluster_token=self.net.tag)
                     for h in self.etcd_hosts]
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.etcd)
        for m, h in zip(self.etcd, self.etcd_hosts, strict=True):
            m.initial_cluster = initial if size > 1 else ""
            m.spawn()
            # Net.close kills it with the rest, also when the test fails.
            self.net.procs.append(NsProcess(h, [], proc=m._proc))
        deadline = time.monotonic() + 30
        for m in self.etcd:
            while not m.healthy():
                m.raise_if_exited()
                assert time.monotonic() < deadline, "etcd did not become healthy"
                time.sleep(0.1)

    @property
    def etcd_endpoints(self) -> str:
        return ",".join(m.endpoint for m in self.etcd)

    def serve(self, service: str, name: str, *extra: str) -> Svc:
        host = self.net.host(name)
        address = f"{host.ip}:{PORT}"
        proc = self.net.spawn(host, [
            sys.executable, "-m", "drover.cli.main", "serve", service, "--etcd",
            self.etcd_endpoints, "--etcd-prefix", self.prefix, "--listen", address,
            "--session-ttl", str(TTL), "--replica", name, "--shutdown-grace", "1",
            "--log-level", "INFO", *extra], log=str(self.logs / f"{name}.log"))
        svc = Svc(service, name, host, address, proc)
        self.svcs[name] = svc
        return svc

    def wait_serving(self, *svcs: Svc, within: float = 60.0) -> None:
        for s in svcs:
            assert self.net.reachable(self.client, s.address, within), f"{s.name} did not start"

    def channel(self, svc: Svc, *interceptors: grpc.aio.ClientInterceptor) -> grpc.aio.Channel:
        """A channel to ``svc`` from the client host (no retries: a fault
        shows as the error it is)."""
        return grpc.aio.insecure_channel(self.net.forward(self.client, svc.address),
                                         options=channel_options(retries=False),
                                         interceptors=list(interceptors) or None)

    async def etcd_ids(self, kind: str) -> set[str]:
        """The ids of ``kind`` objects in etcd now (read from the client host)."""
        relays = ",".join(self.net.forward(self.client, m.endpoint) for m in self.etcd)
        client = await connect(EtcdSettings(endpoints=tuple(relays.split(",")),
                                            prefix=self.prefix), purpose="judge")
        try:
            prefix = Keyspace(self.prefix).kind_prefix(kind).encode()
            end = prefix[:-1] + bytes([prefix[-1] + 1])
            ids: set[str] = set()
            key = prefix
            while True:
                page = await EtcdKV(client).range(key, end, limit=500)
                ids.update(kv.key.decode().rsplit("/", 1)[-1] for kv in page.kvs)
                if not page.more:
                    return ids
                key = page.kvs[-1].key + b"\0"
        finally:
            await client.close()


async def until(check: Callable[[], Awaitable[object]], within: float, what: str) -> object:
    deadline = time.monotonic() + within
    last: object = None
    while time.monotonic() < deadline:
        try:
            got = await check()
        except grpc.aio.AioRpcError as e:
            got, last = None, e.code().name
        if got:
            return got
        await asyncio.sleep(0.3)
    raise AssertionError(f"not within {within}s: {what} (last: {last})")


@dataclass
class Load:
    """The chaos load through the proxy, from the client host."""

    cluster: NetCluster
    proxy: Svc
    rng: random.Random
    record: Record = field(default_factory=Record)
    seed: int = 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Load]:
        self.ch = self.cluster.channel(self.proxy, Recorder(self.record))
        self.state = state_pb2_grpc.StateServiceStub(self.ch)
        self.broker = broker_pb2_grpc.EvalBrokerServiceStub(self.ch)
        self.driver = Driver(self.ch, self.record, self.rng)
        self.deleter = Deleter(self.ch, self.record, self.rng)
        try:
            await until(self.broker_up, 90, "a broker leader through the proxy")
            sim = SimNodes(self.ch, SimConfig(count=3, heartbeat=1.0))
            workers = [Worker(self.ch, WorkerConfig(batch=4, dequeue_timeout=2.0,
                                                    seed=self.seed + i))
                       for i in range(2)]
            tasks = [asyncio.create_task(c) for c in (
                sim.run(), *(w.run() for w in workers), Observer(self.ch, self.record).run(),
                self.driver.run(), self.deleter.run())]
            try:
                yield self
            finally:
                await cancel_and_wait(tasks, within=10.0, what="netfault load")
        finally:
            await self.ch.close()

    async def broker_up(self) -> bool:
        r = await self.broker.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(), timeout=2)
        return bool(r.stats.enabled)

    async def servers(self, service: str) -> list[proxy_pb2.Server]:
        resp = await proxy_pb2_grpc.ClientProxyServiceStub(self.ch).ListServers(
            proxy_pb2.ListServersRequest(service=service), timeout=2)
        return [s for lst in resp.lists for s in lst.servers]

    async def leader(self, service: str) -> str:
        """The replica that leads ``service`` now, as the proxy lists it."""
        async def find() -> str:
            return next((s.replica for s in await self.servers(service) if s.leader), "")
        return str(await until(find, 30, f"a {service} leader"))

    async def eval_ids(self) -> set[str]:
        evals = await list_all(self.state, "ListEvaluations", state_pb2.ListEvaluationsRequest(
            page_size=1000), "evaluations")
        return {e.id for e in evals}


def judge(r: Record, cached: dict[str, set[str]], in_etcd: set[str], final: set[str],
          excused: list[tuple[float, float]] | None = None) -> list[str]:
    """The chaos test's judges on a load's record (nothing lost, no deleted
    evaluation back, no delivery across terms, every call bounded: time
    within an ``excused`` interval does not count), and every state
    replica's evaluations (``cached``) equal to etcd's (``in_etcd``);
    ``final`` is what exists at the end."""
    print(f"evaluations {len(final)} (known to the load {len(r.evals)}, in etcd "
          f"{len(in_etcd)}), deleted {len(r.deleted)}, deliveries {len(r.deliveries)} under "
          f"terms {sorted({term(d.token) for d in r.deliveries})}, jobs registered "
          f"{r.registered}, caches {', '.join(f'{k}: {len(v)}' for k, v in cached.items())}")
    problems = [f"evaluation {e} vanished"
                for e in sorted(r.evals - r.deleted - r.maybe_deleted - final)]
    problems += [f"deleted evaluation {e} is back" for e in sorted(r.deleted & final)]
    problems += overlaps(r.deliveries, r.outcomes, NACK)
    problems += too_long(r.calls, excused or [])
    for name, ids in cached.items():
        if ids != in_etcd:
            problems.append(f"{name}'s cache differs from etcd: {len(ids - in_etcd)} extra, "
                            f"{len(in_etcd - ids)} missing")
    return problems


def served_after(probes: list[tuple[float, str]], who: str, fault: float, bound: float,
                 served: Callable[[str], bool] = lambda code: code == "OK") -> list[str]:
    """Probes (start, code) of ``who`` it answered as a leader (``served``)
    though they started after ``bound``: a deposed leader serving."""
    return [f"{who} served a call {s - fault:.1f}s after the fault ({code}), "
            f"{s - bound:.1f}s past the bound" for s, code in probes if served(code) and s > bound]


def term(token: str) -> int:
    head = token.partition(".")[0]
    return int(head) if head.isdigit() else 0


@dataclass(frozen=True)
class Measured:
    scenario: str
    seed: int
    fault_seconds: float
    write_gap: float
    delivery_gap: float
    calls: int
    failed: dict[str, int]

    def show(self) -> str:
        failed = ", ".join(f"{k} x{n}" for k, n in sorted(self.failed.items())) or "none"
        return (f"{self.scenario} (seed {self.seed}): fault {self.fault_seconds:.1f}s, writes "
                f"stopped {self.write_gap:.1f}s, deliveries stopped {self.delivery_gap:.1f}s, "
                f"{sum(self.failed.values())} of {self.calls} calls failed: {failed}")


def measure(scenario: str, seed: int, record: Record, start: float, healed: float,
            end: float) -> Measured:
    """Longest gaps in [start, end] (the fault from ``start`` to ``healed``
    and what follows it) between
    successful RegisterJob calls and between deliveries; failed calls over
    the whole run by ``method code reason``."""
    def gap(times: list[float]) -> float:
        points = sorted([start, *(t for t in times if start < t < end), end])
        return max(b - a for a, b in itertools.pairwise(points))

    writes = [c.end for c in record.calls if c.method == "RegisterJob" and c.code == "OK"]
    deliveries = [d.end for d in record.deliveries]
    failed = collections.Counter(
        f"{c.method} {c.code}{' ' + c.reason if c.reason else ''}"
        for c in record.calls if c.code != "OK")
    return Measured(scenario, seed, healed - start, gap(writes), gap(deliveries),
                    len(record.calls), dict(failed))


HEADER = ("| scenario | seed | fault (s) | writes stopped (s) | deliveries stopped (s) "
          "| calls | failed (method code reason x count) |\n|---|---|---|---|---|---|---|\n")


def write_result(m: Measured) -> None:
    """Put ``m``'s row into bench/results/netfault.md (one row per scenario;
    a ``## Notes`` section after the table is kept)."""
    rows: dict[str, str] = {}
    notes = ""
    if RESULTS.exists():
        text = RESULTS.read_text()
        # Hand-written notes after the table are kept as they are.
        text, marker, tail = text.partition("\n## Notes")
        notes = marker + tail
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if line.startswith("| ") and cells[0] not in ("scenario", "") and \
                    not re.match(r"^-+$", cells[0]):
                rows[cells[0]] = line
    failed = "; ".join(f"{k} x{n}" for k, n in sorted(m.failed.items())) or "none"
    rows[m.scenario] = (f"| {m.scenario} | {m.seed} | {m.fault_seconds:.1f} | "
                        f"{m.write_gap:.1f} | {m.delivery_gap:.1f} | {m.calls} | {failed} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        "# Network fault scenarios (tests/system/test_netfault.py)\n\n"
        "Written by the tests (`make test-netfault`): per scenario, how long the fault "
        "lasted, the longest gap between successful writes (RegisterJob through the "
        "proxy) and between deliveries (Dequeue handing out an evaluation, through the "
        "proxy) from the fault's start to the end of the settle time after healing, "
        "and the calls of the whole run that failed, by method, status code and "
        "ErrorInfo reason. No delay is modelled (no tc/netem on these machines).\n\n"
        + HEADER + "\n".join(rows[k] for k in sorted(rows)) + "\n" + notes)

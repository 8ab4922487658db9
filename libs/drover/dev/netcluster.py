"""drover on a network of namespaces (:mod:`drover.dev.netns`), and what a
network fault costs it: shared by the netfault tests and ``drover drill``.

:class:`NetCluster` starts real processes, each in its own namespace on the
bridge: etcd members (``etcd-<i>``) and `drover serve` replicas (one host per
replica, named after it), all listening on their host's address. The calling
process reaches them through the ``client`` host (loopback relays,
:meth:`drover.dev.netns.Net.forward`): in-process load is that host, and
faults on it apply to the load.

:func:`measure` turns a record of calls (anything with ``calls``, each with
``method``, ``code``, ``reason`` and ``end``, and ``deliveries``, each with
``end``) into the numbers a fault scenario reports: the longest gap between
successful writes (RegisterJob) and between deliveries (a Dequeue handing out
an evaluation) around the fault, and the failed calls by method, code and
ErrorInfo reason.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import grpc

from drover.config import EtcdSettings
from drover.coord import EtcdKV, Keyspace, connect
from drover.dev.etcd import EtcdServer
from drover.dev.netns import Host, Net, NsProcess
from drover.rpc.channels import channel_options

__all__ = ["HOLD", "NACK", "PORT", "TTL", "Measured", "NetCluster", "Svc", "measure", "until"]

#: Short timings, so a fault shows within seconds: the session TTL ...
TTL = 2
#: ... the proxy's and the internal clients' hold timeout ...
HOLD = 1.5
#: ... and the broker's nack timeout.
NACK = 8.0
PORT = 50051


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
            # Net.close kills it with the rest, also when the caller fails.
            self.net.procs.append(NsProcess(h, [], proc=m._proc))
        deadline = time.monotonic() + 30
        for m in self.etcd:
            while not m.healthy():
                m.raise_if_exited()
                if time.monotonic() > deadline:
                    raise RuntimeError("etcd did not become healthy within 30 s")
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
            if not self.net.reachable(self.client, s.address, within):
                raise RuntimeError(f"{s.name} did not start (see {self.logs / s.name}.log)")

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
    """``check()``'s first truthy answer (gRPC errors count as none), polled
    every 0.3 s; AssertionError after ``within`` seconds."""
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


class _Call(Protocol):
    @property
    def method(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def end(self) -> float: ...


class _Delivery(Protocol):
    @property
    def end(self) -> float: ...


class CallRecord(Protocol):
    @property
    def calls(self) -> Sequence[_Call]: ...
    @property
    def deliveries(self) -> Sequence[_Delivery]: ...


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


def measure(scenario: str, seed: int, record: CallRecord, start: float, healed: float,
            end: float) -> Measured:
    """Longest gaps in [start, end] (the fault from ``start`` to ``healed``
    and what follows it) between successful RegisterJob calls and between
    deliveries; failed calls over the whole run by ``method code reason``."""
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

"""The process supervisor behind `drover dev`.

Starts etcd and the four services (two of each elected one by default) as
child processes on fixed loopback ports, restarts a child that dies (with
backoff, logged: a kill -9 of the broker leader is a failover to watch, not
the end of the suite), and stops every one of them on SIGTERM/SIGINT within a deadline
(SIGTERM, then SIGKILL). Children also get PR_SET_PDEATHSIG so that even a
``kill -9`` of the supervisor leaves none behind on Linux.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from drover.dev.etcd import EtcdCluster, EtcdServer
from drover.dev.ports import (
    busy_message,
    ephemeral_ports,
    port_holders,
    port_in_use,
    wait_for_port,
)
from drover.dev.process import die_with_parent
from drover.dev.workers import worker_command

#: etcd's auto-compaction retention in `drover dev` (the manifests' too).
COMPACTION_RETENTION = "1h"
#: Raft entries etcd keeps in memory between snapshots, in `drover dev` and
#: the manifests: etcd 3.6's default (3.4/3.5 keep 100,000: their RSS grew
#: ~7 MiB/min for the soak's whole run).
SNAPSHOT_COUNT = 10_000


@dataclass(frozen=True)
class DevLayout:
    """Fixed loopback ports of the local suite (defaults in one place).

    Replica ``r`` of a service listens on its port plus ``REPLICA_STRIDE * r``
    (proxy 7100, 7104, ...; broker 7102, 7106, ...); its metrics on that port
    plus ``metrics_offset`` (service 7100-7103 -> metrics 7200-7203, in the
    same order).
    """

    host: str = "127.0.0.1"
    etcd_client: int = 23790
    etcd_peer: int = 23800
    etcd_metrics: int = 23810
    proxy: int = 7100
    state: int = 7101
    broker: int = 7102
    deployments: int = 7103
    #: The web UI (`drover ui`; Nomad's port).
    ui: int = 4646
    #: Not a port: the distance from a service port to its metrics port.
    metrics_offset: int = 100

    def shifted(self, offset: int) -> DevLayout:
        """The same layout with every port moved by ``offset``."""
        ports = {
            f.name: getattr(self, f.name) + offset
            for f in dataclasses.fields(self)
            if f.name not in ("host", "metrics_offset")
        }
        return DevLayout(host=self.host, metrics_offset=self.metrics_offset, **ports)

    def port(self, service: str, replica: int = 0) -> int:
        return int(getattr(self, service)) + REPLICA_STRIDE * replica

    def address(self, service: str, replica: int = 0) -> str:
        return f"{self.host}:{self.port(service, replica)}"

    def metrics_port(self, service: str, replica: int = 0) -> int:
        return self.port(service, replica) + self.metrics_offset

    def ports(self, etcd_members: int = 1,
              replicas: Mapping[str, int] | None = None) -> dict[int, str]:
        """Every port the suite binds, and what for."""
        out: dict[int, str] = {}
        for i in range(etcd_members):
            out[self.etcd_client + i] = f"etcd member {i} clients"
            out[self.etcd_peer + i] = f"etcd member {i} peers"
            out[self.etcd_metrics + i] = f"etcd member {i} metrics"
        for svc in SERVICES:
            for r in range((replicas or {}).get(svc, 1)):
                name = svc if r == 0 else f"{svc}-{r}"
                out[self.port(svc, r)] = name
                out[self.metrics_port(svc, r)] = f"{name} metrics"
        out[self.ui] = "web UI"
        return out


SERVICES = ("state", "broker", "deployments", "proxy")
#: Replica r of a service is on its port + 4 r: the four services' ports
#: interleave (7100-7103 for the first replicas, 7104-7107 for the second).
REPLICA_STRIDE = 4
#: At most this many replicas of a service: more would reach the metrics
#: ports (7100 + 4 * 25 = 7200).
MAX_REPLICAS = 9
#: Replicas per service by default: two of each elected service (broker,
#: deployment watcher), so killing a leader shows a failover; one of the
#: others (the proxy and the state service are not elected).
DEFAULT_REPLICAS: Mapping[str, int] = {"state": 1, "broker": 2, "deployments": 2, "proxy": 1}
#: etcd's --max-txn-ops in `drover dev`, told to the state service, the
#: broker (whose acks then go in one txn per AckBatch), the worker (whose
#: plans then hold up to ~1,000 writes) and the simulated nodes (whose
#: allocation reports fill calls of that size) too: txns of
#: ~1,000 keys cost etcd 10-12 us a key against 17-18 us at the default 128.
DEV_MAX_TXN_OPS = 1024
#: How long `drover dev` waits for its ports when only the children of a
#: suite killed a moment ago hold them (a state replica drains its streams
#: for up to its own shutdown grace after the SIGTERM it was sent).
PORT_RELEASE_WAIT = 15.0
#: How long a service of the suite may take to listen when it starts.
START_TIMEOUT = 60.0
#: Where `drover dev --acl` keeps the tokens it created (in its data dir),
#: so a restart on the same --data-dir finds them again.
ACL_TOKENS_FILE = "acl-tokens.json"
#: Where the simulated nodes keep their secrets (in the data dir), so a
#: restarted sim (or suite) still speaks for its nodes.
SIM_SECRETS_FILE = "sim-node-secrets.json"


class PortsBusy(RuntimeError):
    """A port of the layout is taken before the suite starts."""


@dataclass(frozen=True)
class ChildSpec:
    """How to (re)start one child process of the suite."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None

    def spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(list(self.argv), preexec_fn=die_with_parent,
                                env=dict(self.env) if self.env is not None else None)


@dataclass(frozen=True)
class Backoff:
    """Restart delays: ``first``, doubling up to ``cap``; a child that ran
    ``reset_after`` seconds before dying starts again from ``first``."""

    first: float = 0.5
    cap: float = 10.0
    reset_after: float = 30.0

    def next(self, previous: float, ran_for: float) -> float:
        if previous <= 0 or ran_for >= self.reset_after:
            return self.first
        return min(self.cap, previous * 2)


@dataclass
class _Restart:
    """Bookkeeping of one child between restarts."""

    started_at: float
    delay: float = 0.0
    due: float | None = None
    count: int = 0


def exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass
class Supervisor:
    layout: DevLayout = field(default_factory=DevLayout)
    #: Where etcd keeps its data (and `--acl` its tokens); None: a fresh temp
    #: dir, removed at stop.
    data_dir: str | None = None
    stop_timeout: float = 4.0
    log: Callable[[str], None] = print
    etcd_members: int = 1
    #: Run every service with ``--acl``; the suite bootstraps ACLs itself.
    acl: bool = False
    etcd: EtcdServer | None = None
    cluster: EtcdCluster | None = None
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: Simulated nodes to start with the suite; with any, one scheduler
    #: worker too (`drover dev --nodes N`), so jobs roll out unattended.
    nodes: int = 0
    #: Which scheduler worker runs with them (:mod:`drover.dev.workers`).
    worker: str = "python"
    #: Replicas per service (missing: one).
    replicas: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_REPLICAS))
    #: etcd's periodic auto-compaction retention, as the manifests set it
    #: (deploy/k8s/base/etcd.yaml): a Subscribe resumes from an index within it.
    compaction_retention: str = COMPACTION_RETENTION
    #: etcd's --quota-backend-bytes (0: etcd's default, 2 GiB).
    quota_backend_bytes: int = 0
    backoff: Backoff = field(default_factory=Backoff)
    clock: Callable[[], float] = time.monotonic
    specs: dict[str, ChildSpec] = field(default_factory=dict)
    _restarts: dict[str, _Restart] = field(default_factory=dict)
    _temp_dir: str | None = None

    def start(self) -> None:
        lay = self.layout
        n = self.etcd_members
        self.wait_for_ports(lay.ports(n, self.replicas))
        if self.data_dir is None:
            self._temp_dir = self.data_dir = tempfile.mkdtemp(prefix="drover-dev-")
        else:
            os.makedirs(self.data_dir, exist_ok=True)
        if n > 1:  # each member its own data dir (etcd writes its log there first)
            for i in range(n):
                os.makedirs(os.path.join(self.data_dir, f"member-{i}"), exist_ok=True)
        members = [EtcdServer(
            host=lay.host,
            client_port=lay.etcd_client + i,
            peer_port=lay.etcd_peer + i,
            metrics_port=lay.etcd_metrics + i,
            data_dir=(os.path.join(self.data_dir, f"member-{i}") if n > 1 else self.data_dir),
            name="drover-dev" if n == 1 else f"drover-dev-{i}",
            extra_args=("--max-txn-ops", str(DEV_MAX_TXN_OPS),
                        "--auto-compaction-mode", "periodic",
                        "--auto-compaction-retention", self.compaction_retention,
                        "--snapshot-count", str(SNAPSHOT_COUNT),
                        *(("--quota-backend-bytes", str(self.quota_backend_bytes))
                          if self.quota_backend_bytes else ())),
        ) for i in range(n)]
        self.cluster = EtcdCluster(members=members).start()
        self.etcd = members[0]
        for m in members:
            self.log(f"etcd           {m.endpoint}  (metrics {m.metrics_url})")
        endpoints = self.cluster.endpoint_list
        started: list[tuple[str, str, int]] = []
        for svc in SERVICES:
            if svc != "state" and started[-1][1] == "state":
                # The others read the state service from their first moment:
                # started once it listens, their log shows no refused calls.
                self._wait_listening("state-0", lay.port("state", 0))
            for r in range(self.replicas.get(svc, 1)):
                name = f"{svc}-{r}"
                self._spawn(ChildSpec(name, (
                    sys.executable, "-m", "drover.cli.main", "serve", svc,
                    "--etcd", endpoints,
                    "--listen", lay.address(svc, r),
                    # the name this log gives it, as `drover operator members` shows it
                    "--replica", name,
                    "--metrics-listen", f"{lay.host}:{lay.metrics_port(svc, r)}",
                    "--state-address", lay.address("state"),
                    "--session-ttl", "6",
                    *([f"--{svc}-max-txn-ops", str(DEV_MAX_TXN_OPS)]
                      if svc in ("state", "broker") else []),
                    *(["--acl"] if self.acl else []),
                )))
                started.append((name, svc, r))
        for name, svc, r in started:
            address = lay.address(svc, r)
            self._wait_listening(name, lay.port(svc, r))
            if not wait_serving(address, 30):
                raise RuntimeError(f"{name} on {address} did not become SERVING")
            self.log(f"{name:<14} {address}  (metrics {lay.host}:{lay.metrics_port(svc, r)}"
                     f", pid {self.children[name].pid})")
        tokens: dict[str, str] = {}
        if self.acl:
            tokens = self._acl_tokens()
        if self.nodes:
            self._start_clients(tokens)
        self._start_ui()

    def _start_ui(self) -> None:
        """The web UI, a client of the proxy (each user's token comes from
        the browser: it gets none)."""
        listen = f"{self.layout.host}:{self.layout.ui}"
        self._spawn(ChildSpec("ui", (sys.executable, "-m", "drover.cli.main", "ui",
                                     "--listen", listen,
                                     "--address", self.layout.address("proxy"))))
        self._wait_listening("ui", self.layout.ui)
        self.log(f"ui             http://{listen}/ui  (web UI, pid {self.children['ui'].pid})")

    def _wait_listening(self, name: str, port: int) -> None:
        """Until the child listens on ``port``; a child that exits first fails
        the start at once. The bound is generous: six Python services
        importing grpc at once on a busy two-core box take seconds each."""
        deadline = time.monotonic() + START_TIMEOUT
        while not wait_for_port(self.layout.host, port, 1):
            code = self.children[name].poll()
            if code is not None:
                raise RuntimeError(f"{name} exited ({exit_reason(code)}) before listening "
                                   f"on {self.layout.host}:{port}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start listening on {self.layout.host}:"
                                   f"{port} within {START_TIMEOUT:g}s")

    def _spawn(self, spec: ChildSpec) -> None:
        self.specs[spec.name] = spec
        self.children[spec.name] = spec.spawn()
        self._restarts[spec.name] = _Restart(started_at=self.clock())

    @property
    def acl_tokens_path(self) -> str:
        assert self.data_dir is not None
        return os.path.join(self.data_dir, ACL_TOKENS_FILE)

    def _acl_tokens(self) -> dict[str, str]:
        """The management secret and the worker's and nodes' tokens: made
        now (bootstrap), or those a previous run on this data dir made."""
        import grpc

        path = self.acl_tokens_path
        try:
            tokens = self._bootstrap_acl()
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.FAILED_PRECONDITION or not os.path.exists(path):
                raise
            with open(path) as f:
                tokens = json.load(f)
            self.log(f"acl            already bootstrapped; tokens from {path}")
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(tokens, f)
            self.log("acl            bootstrapped; management token (also in "
                     f"{path}):")
        self.log(f"               export DROVER_TOKEN={tokens['management']}")
        return tokens

    def _bootstrap_acl(self) -> dict[str, str]:
        """Bootstrap ACLs and give the worker and the simulated nodes tokens
        of their own (least privilege)."""
        import grpc

        from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc
        from drover.rpc.channels import channel_options
        from drover.rpc.remote import remote_status

        policies = {
            # node read: the worker places on nodes (the broker leader, not the
            # worker, marks nodes that miss their heartbeats down)
            "dev-worker": "scheduler: {policy: write}\nnode: {policy: read}\n"
                          "namespace: {'*': {policy: read}}\n",
            "dev-node": "node: {policy: write}\nnamespace: {'*': {policy: read}}\n",
        }
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(self.layout.address("state"),
                                   options=channel_options(retries=False)) as ch:
            stub = acl_pb2_grpc.AclServiceStub(ch)
            while True:
                try:
                    secret = stub.Bootstrap(acl_pb2.BootstrapRequest(), timeout=5).secret_id
                    break
                except grpc.RpcError as e:
                    if remote_status(e).code != "UNAVAILABLE" or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            md = (("authorization", f"Bearer {secret}"),)
            tokens = {"management": secret}
            for name, rules in policies.items():
                stub.ApplyPolicy(acl_pb2.ApplyPolicyRequest(name=name, rules=rules),
                                 metadata=md, timeout=5)
                tokens[name] = stub.CreateToken(acl_pb2.CreateTokenRequest(
                    name=name, policies=[name]), metadata=md, timeout=5).secret_id
        return tokens

    def _start_clients(self, tokens: dict[str, str]) -> None:
        proxy = self.layout.address("proxy")
        cli = (sys.executable, "-m", "drover.cli.main")

        def env(token: str) -> dict[str, str] | None:
            return {**os.environ, "DROVER_TOKEN": token} if token else None

        self._spawn(ChildSpec("worker", worker_command(self.worker, proxy, DEV_MAX_TXN_OPS),
                              env(tokens.get("dev-worker", ""))))
        self._spawn(ChildSpec("sim", (*cli, "sim", "nodes", str(self.nodes), "--address", proxy,
                                      "--max-txn-ops", str(DEV_MAX_TXN_OPS), "--keep",
                                      "--secrets-file",
                                      os.path.join(str(self.data_dir), SIM_SECRETS_FILE)),
                              env(tokens.get("dev-node", ""))))
        self.log(f"worker         {self.worker} scheduler for service, batch via {proxy} "
                 f"(pid {self.children['worker'].pid})")
        self.log(f"sim            {self.nodes} simulated nodes sim-0..sim-{self.nodes - 1} "
                 f"(pid {self.children['sim'].pid})")

    def poll(self) -> str | None:
        """The name of a child that exited, if any."""
        for name, proc in self.children.items():
            if proc.poll() is not None:
                return name
        return None

    def supervise(self) -> None:
        """One round: log a child that died and schedule its restart (with
        backoff), restart those whose delay has passed, and start again an
        etcd member that died (same ports and data). Never raises for a
        child; a restart that fails is logged and tried again later."""
        now = self.clock()
        for name, proc in list(self.children.items()):
            rs = self._restarts.setdefault(name, _Restart(started_at=now))
            code = proc.poll()
            if code is None or name not in self.specs:
                continue
            if rs.due is None:
                rs.delay = self.backoff.next(rs.delay, now - rs.started_at)
                rs.due = now + rs.delay
                self.log(f"{name} exited ({exit_reason(code)}); restarting in {rs.delay:g}s")
            elif now >= rs.due:
                try:
                    self.children[name] = self.specs[name].spawn()
                except OSError as e:
                    rs.due = now + rs.delay
                    self.log(f"{name} restart failed: {e}")
                    continue
                rs.count += 1
                rs.due, rs.started_at = None, now
                self.log(f"{name} restarted (pid {self.children[name].pid}, "
                         f"restart {rs.count})")
        if self.cluster is not None:
            for i, m in enumerate(self.cluster.members):
                if m.running:
                    continue
                self.log(f"etcd member {i} exited; restarting it on its data")
                try:
                    m.restart()
                except RuntimeError as e:
                    self.log(f"etcd member {i} did not come back yet: {e}")

    def wait_for_ports(self, ports: Mapping[int, str]) -> None:
        """Before starting anything: a port held by a listener (another
        `drover dev`, most likely) would otherwise look like our own etcd
        answering, then end in one "Address already in use" traceback per
        service. Ports held only by the orphans of a suite killed a moment
        ago (each was sent SIGTERM and is shutting down), or by the kernel
        alone, are waited for up to PORT_RELEASE_WAIT; any other holder is
        named at once."""
        host = self.layout.host
        deadline = time.monotonic() + PORT_RELEASE_WAIT
        told = False
        while True:
            busy = [p for p in sorted(ports) if port_in_use(host, p)]
            if not busy:
                return
            holders = {h.pid: h for p in busy for h in port_holders(p)}
            if time.monotonic() >= deadline or not all(h.orphan for h in holders.values()):
                raise PortsBusy(busy_message(host, [(p, ports[p]) for p in busy],
                                             list(holders.values())))
            if not told:
                self.log(f"waiting up to {PORT_RELEASE_WAIT:g}s for ports {busy[0]}.. on {host}: "
                         "a suite stopped a moment ago is still letting go of them")
                told = True
            time.sleep(0.2)

    def stop(self) -> None:
        deadline = time.monotonic() + self.stop_timeout
        for proc in self.children.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.children.values():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.children.clear()
        if self.cluster is not None:
            for m in self.cluster.members:
                m.stop(timeout=max(0.5, deadline - time.monotonic()))
            self.cluster = None
            self.etcd = None
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None


def free_layout(etcd_members: int = 1, tries: int = 50) -> tuple[int, DevLayout]:
    """A random port offset whose whole shifted layout is free now (tests and
    benches that run their own `drover dev`); the offset and the layout,
    drawn from :func:`layout_offsets`."""
    rng = random.Random()
    replicas = {s: MAX_REPLICAS for s in SERVICES}
    offsets = layout_offsets(etcd_members, ephemeral_ports()[0])
    for _ in range(tries):
        offset = rng.choice(offsets)
        lay = DevLayout().shifted(offset)
        if not any(port_in_use(lay.host, p) for p in lay.ports(etcd_members, replicas)):
            return offset, lay
    raise RuntimeError("no free port range for the dev suite")


def layout_offsets(etcd_members: int, ephemeral_low: int) -> range:
    """The offsets :func:`free_layout` draws from: every port below the
    kernel's ephemeral range (from ``ephemeral_low``) when it leaves room
    for at least :data:`MIN_OFFSETS` (Linux's default, 32768, leaves offsets
    up to ~8,900), else anywhere up to :data:`HIGHEST_OFFSET`. A suite's
    processes open dozens of connections while it starts, and one of them
    could otherwise take a port a child binds only later (a metrics port,
    the web UI's), which fails the whole start after its proxy answered."""
    highest = max(DevLayout().ports(etcd_members, {s: MAX_REPLICAS for s in SERVICES}))
    below = ephemeral_low - highest
    if below - LOWEST_OFFSET < MIN_OFFSETS:
        return range(LOWEST_OFFSET, HIGHEST_OFFSET)
    return range(LOWEST_OFFSET, min(below, HIGHEST_OFFSET))


#: The smallest offset free_layout draws: the services' ports move off the
#: default layout's (7100-7135) that a `make run` beside the tests holds.
LOWEST_OFFSET = 1000
#: The largest: etcd's ports (23790 + offset) stay below 43,800.
HIGHEST_OFFSET = 20_000
#: Fewer offsets than this below the ephemeral range is no room.
MIN_OFFSETS = 2000


def wait_serving(address: str, timeout: float) -> bool:
    """Block until ``address`` answers grpc.health.v1 Check with SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    from drover.rpc.channels import MAX_MESSAGE_BYTES

    limits = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
              ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
    with grpc.insecure_channel(address, options=limits) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        while time.monotonic() < deadline:
            try:
                resp = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    return False


def pids_of(sup: Supervisor) -> list[int]:
    out = [p.pid for p in sup.children.values()]
    if sup.cluster is not None:
        out.extend(m.pid for m in sup.cluster.members if m.running)
    return out


__all__ = ["COMPACTION_RETENTION", "DEFAULT_REPLICAS", "SERVICES", "Backoff", "ChildSpec",
           "DevLayout", "Supervisor", "pids_of"]

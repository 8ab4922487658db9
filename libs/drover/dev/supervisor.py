"""The process supervisor behind `drover dev`.

Starts one etcd and the four services as child processes on fixed loopback
ports and stops every one of them on SIGTERM/SIGINT within a deadline
(SIGTERM, then SIGKILL). Children also get PR_SET_PDEATHSIG so that even a
``kill -9`` of the supervisor leaves none behind on Linux.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.dev.etcd import EtcdCluster, EtcdServer
from drover.dev.ports import port_in_use, wait_for_port
from drover.dev.process import die_with_parent


@dataclass(frozen=True)
class DevLayout:
    """Fixed loopback ports of the local suite (defaults in one place)."""

    host: str = "127.0.0.1"
    etcd_client: int = 23790
    etcd_peer: int = 23800
    etcd_metrics: int = 23810
    proxy: int = 7100
    state: int = 7101
    broker: int = 7102
    deployments: int = 7103
    metrics_base: int = 7200

    def shifted(self, offset: int) -> DevLayout:
        """The same layout with every port moved by ``offset``."""
        ports = {
            f.name: getattr(self, f.name) + offset
            for f in dataclasses.fields(self)
            if f.name != "host"
        }
        return DevLayout(host=self.host, **ports)

    def address(self, service: str) -> str:
        return f"{self.host}:{getattr(self, service)}"

    def ports(self, etcd_members: int = 1) -> dict[int, str]:
        """Every port the suite binds, and what for."""
        out: dict[int, str] = {}
        for i in range(etcd_members):
            out[self.etcd_client + i] = f"etcd member {i} clients"
            out[self.etcd_peer + i] = f"etcd member {i} peers"
            out[self.etcd_metrics + i] = f"etcd member {i} metrics"
        for i, svc in enumerate(SERVICES):
            out[getattr(self, svc)] = svc
            out[self.metrics_base + i] = f"{svc} metrics"
        return out


SERVICES = ("state", "broker", "deployments", "proxy")
#: etcd's --max-txn-ops in `drover dev`, told to the state service and the
#: broker (whose acks then go in one txn per AckBatch) too: txns of
#: ~1,000 keys cost etcd 10-12 us a key against 17-18 us at the default 128.
DEV_MAX_TXN_OPS = 1024


class PortsBusy(RuntimeError):
    """A port of the layout is taken before the suite starts."""


@dataclass
class Supervisor:
    layout: DevLayout = field(default_factory=DevLayout)
    data_dir: str | None = None
    stop_timeout: float = 4.0
    log: Callable[[str], None] = print
    etcd_members: int = 1
    #: Run every service with ``--acl`` (bootstrap with `drover acl bootstrap`).
    acl: bool = False
    etcd: EtcdServer | None = None
    cluster: EtcdCluster | None = None
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: Simulated nodes to start with the suite; with any, one scheduler
    #: worker too (`drover dev --nodes N`), so jobs roll out unattended.
    nodes: int = 0

    def start(self) -> None:
        lay = self.layout
        n = self.etcd_members
        # Before starting anything: a port already taken (another `drover
        # dev`, most likely) would otherwise look like our own etcd answering,
        # then end in one "Address already in use" traceback per service.
        busy = [f"{port} ({what})" for port, what in sorted(lay.ports(n).items())
                if port_in_use(lay.host, port)]
        if busy:
            raise PortsBusy(
                f"port{'s' if len(busy) > 1 else ''} {', '.join(busy[:4])}"
                f"{' and more' if len(busy) > 4 else ''} already in use on {lay.host}: "
                "another `drover dev` running? stop it, or add --port-offset N")
        members = [EtcdServer(
            host=lay.host,
            client_port=lay.etcd_client + i,
            peer_port=lay.etcd_peer + i,
            metrics_port=lay.etcd_metrics + i,
            data_dir=(os.path.join(self.data_dir, f"member-{i}") if self.data_dir and n > 1
                      else self.data_dir),
            name="drover-dev" if n == 1 else f"drover-dev-{i}",
            extra_args=("--max-txn-ops", str(DEV_MAX_TXN_OPS)),
        ) for i in range(n)]
        self.cluster = EtcdCluster(members=members).start()
        self.etcd = members[0]
        for m in members:
            self.log(f"etcd         {m.endpoint}  (metrics {m.metrics_url})")
        endpoints = self.cluster.endpoint_list
        for i, svc in enumerate(SERVICES):
            args = [
                sys.executable, "-m", "drover.cli.main", "serve", svc,
                "--etcd", endpoints,
                "--listen", lay.address(svc),
                "--replica", f"{svc}-dev",
                "--metrics-listen", f"{lay.host}:{lay.metrics_base + i}",
                "--state-address", lay.address("state"),
                "--session-ttl", "6",
                *([f"--{svc}-max-txn-ops", str(DEV_MAX_TXN_OPS)]
                  if svc in ("state", "broker") else []),
                *(["--acl"] if self.acl else []),
            ]
            self.children[svc] = subprocess.Popen(args, preexec_fn=die_with_parent)
        for svc in SERVICES:
            host, port = lay.address(svc).split(":")
            if not wait_for_port(host, int(port), 20):
                raise RuntimeError(f"{svc} did not start listening on {lay.address(svc)}")
            if not wait_serving(lay.address(svc), 30):
                raise RuntimeError(f"{svc} on {lay.address(svc)} did not become SERVING")
            self.log(f"{svc:<12} {lay.address(svc)}  (metrics {lay.host}:"
                     f"{lay.metrics_base + SERVICES.index(svc)})")
        tokens: dict[str, str] = {}
        if self.acl and self.nodes:
            tokens = self._bootstrap_acl()
        if self.nodes:
            self._start_clients(tokens)

    def _bootstrap_acl(self) -> dict[str, str]:
        """Bootstrap ACLs and give the worker and the simulated nodes tokens
        of their own (least privilege); print the management secret once."""
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
            tokens = {}
            for name, rules in policies.items():
                stub.ApplyPolicy(acl_pb2.ApplyPolicyRequest(name=name, rules=rules),
                                 metadata=md, timeout=5)
                tokens[name] = stub.CreateToken(acl_pb2.CreateTokenRequest(
                    name=name, policies=[name]), metadata=md, timeout=5).secret_id
        self.log("acl          bootstrapped; management token (shown once):")
        self.log(f"             export DROVER_TOKEN={secret}")
        return tokens

    def _start_clients(self, tokens: dict[str, str]) -> None:
        proxy = self.layout.address("proxy")
        cli = [sys.executable, "-m", "drover.cli.main"]

        def env(token: str) -> dict[str, str]:
            return {**os.environ, "DROVER_TOKEN": token} if token else dict(os.environ)

        self.children["worker"] = subprocess.Popen(
            [*cli, "worker", "--address", proxy], preexec_fn=die_with_parent,
            env=env(tokens.get("dev-worker", "")))
        self.children["sim"] = subprocess.Popen(
            [*cli, "sim", "nodes", str(self.nodes), "--address", proxy, "--keep"],
            preexec_fn=die_with_parent, env=env(tokens.get("dev-node", "")))
        self.log(f"worker       scheduler for service, batch via {proxy}")
        self.log(f"sim          {self.nodes} simulated nodes sim-0..sim-{self.nodes - 1}")

    def poll(self) -> str | None:
        """The name of a child that exited, if any."""
        for name, proc in self.children.items():
            if proc.poll() is not None:
                return name
        return None

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


def free_layout(etcd_members: int = 1, tries: int = 50) -> tuple[int, DevLayout]:
    """A random port offset whose whole shifted layout is free now (tests and
    benches that run their own `drover dev`); the offset and the layout."""
    rng = random.Random()
    for _ in range(tries):
        offset = rng.randrange(1000, 20000)
        lay = DevLayout().shifted(offset)
        if not any(port_in_use(lay.host, p) for p in lay.ports(etcd_members)):
            return offset, lay
    raise RuntimeError("no free port range for the dev suite")


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


__all__ = ["SERVICES", "DevLayout", "Supervisor", "pids_of"]

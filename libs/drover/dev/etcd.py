"""A real, throwaway etcd on loopback: one member, or a cluster of several.

Tests (session fixture), benchmarks and `drover dev` all start etcd the same
way: the Debian ``etcd`` binary, a temp data dir, free loopback ports for
client, peer and metrics URLs. The process is put in its own process group
so that stopping it never leaves a child behind; tests may SIGSTOP/SIGCONT it
to simulate a frozen etcd.

:class:`EtcdCluster` starts ``n`` members that form one raft group (default
etcd timing: 100 ms heartbeat, 1 s election timeout), and can freeze, kill -9
and restart any member (its data dir survives, so it rejoins) and tell which
member leads (from each member's ``etcd_server_is_leader`` metric).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from drover.dev.netns import entered
from drover.dev.ports import free_port
from drover.dev.process import new_session_dying_with_parent

INSTALL_HINT = (
    "etcd was not found on PATH; install Debian's package `etcd-server` "
    "(apt-get install etcd-server) or pass an external endpoint"
)


class EtcdNotInstalled(RuntimeError):
    pass


def etcd_binary() -> str:
    found = shutil.which("etcd") or (
        "/usr/bin/etcd" if os.path.exists("/usr/bin/etcd") else None
    )
    if not found:
        raise EtcdNotInstalled(INSTALL_HINT)
    return found


#: Starts tried when a picked port turns out taken (see :meth:`EtcdServer.start`).
PORT_ATTEMPTS = 3


@dataclass
class EtcdServer:
    """One etcd member on 127.0.0.1. ``start()`` blocks until it serves."""

    host: str = "127.0.0.1"
    client_port: int = 0
    peer_port: int = 0
    metrics_port: int = 0
    data_dir: str | None = None
    name: str = "drover-test"
    extra_args: tuple[str, ...] = ()
    log_path: str | None = None
    #: Serve clients over TLS with this server cert/key; with ``client_ca``,
    #: require client certificates signed by it.
    tls_cert: str = ""
    tls_key: str = ""
    client_ca: str = ""
    #: ``name=peer_url,...`` of every member when this one is part of a
    #: cluster (empty: a cluster of one).
    initial_cluster: str = ""
    cluster_token: str = "drover"
    #: Run in this network namespace (a :class:`drover.dev.netns.Net`
    #: host's; ``host`` is then its address); empty: the machine's own.
    netns: str = ""
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _own_dir: bool = field(default=False, repr=False)

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def url(self) -> str:
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{self.endpoint}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.metrics_port}/metrics"

    @property
    def pid(self) -> int:
        assert self._proc is not None, "etcd is not running"
        return self._proc.pid

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def allocate(self) -> EtcdServer:
        """Pick free ports and a data dir (before the process starts, so a
        cluster can list every member's peer URL up front)."""
        self.client_port = self.client_port or free_port(self.host)
        self.peer_port = self.peer_port or free_port(self.host)
        self.metrics_port = self.metrics_port or free_port(self.host)
        if self.data_dir is None:
            self.data_dir = tempfile.mkdtemp(prefix="drover-etcd-")
            self._own_dir = True
        return self

    def start(self, timeout: float = 20.0) -> EtcdServer:
        """Spawn and wait until healthy. Ports this server picked itself
        are picked again when one was taken between the pick and etcd's
        bind (the bind-to-0 race of :func:`free_port`), up to
        :data:`PORT_ATTEMPTS` times; ports it was given are never changed."""
        own_ports = not (self.client_port or self.peer_port or self.metrics_port)
        for attempt in range(PORT_ATTEMPTS):
            self.spawn()
            try:
                self.wait_healthy(timeout)
            except RuntimeError:
                if not (own_ports and self.lost_port_race()) or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.stop()
                self.forget_ports()
                continue
            return self
        raise AssertionError("unreachable")

    def lost_port_race(self) -> bool:
        """Whether etcd exited because a port it was told was taken."""
        return not self.running and "address already in use" in self.log_tail(40)

    def forget_ports(self) -> None:
        """Drop the picked ports (and an own, partly written data dir) so
        the next :meth:`allocate` picks fresh ones."""
        self.client_port = self.peer_port = self.metrics_port = 0
        if self._own_dir and self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir, self._own_dir = None, False

    def spawn(self) -> None:
        """Start the process without waiting (a cluster member is healthy
        only once a quorum of members runs)."""
        binary = etcd_binary()
        self.allocate()
        assert self.data_dir is not None
        peer = self.peer_url
        args = [
            binary,
            "--name", self.name,
            "--data-dir", str(Path(self.data_dir) / "member"),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", self.initial_cluster or f"{self.name}={peer}",
            "--initial-cluster-state", "new",
            "--initial-cluster-token", self.cluster_token,
            "--listen-metrics-urls", f"http://{self.host}:{self.metrics_port}",
            *self._tls_args(),
            "--logger", "zap",
            "--log-outputs", "stderr",
            *self.extra_args,
        ]
        if self.netns:
            args = ["ip", "netns", "exec", self.netns, *args]
        log = open(self.log_path or os.path.join(self.data_dir, "etcd.log"), "ab")
        env = dict(os.environ, ETCD_UNSUPPORTED_ARCH=os.environ.get("ETCD_UNSUPPORTED_ARCH", ""))
        setpriv = shutil.which("setpriv")
        if setpriv:
            # No Python between fork and exec: a preexec_fn in a process with
            # gRPC threads running (a test, the fault drill) can crash the
            # child before it execs (seen: etcd "exited" with SIGSEGV).
            self._proc = subprocess.Popen(
                [setpriv, "--pdeathsig", "TERM", "--", *args], stdout=log, stderr=log,
                env=env, start_new_session=True,
            )
        else:
            self._proc = subprocess.Popen(
                args, stdout=log, stderr=log, env=env, preexec_fn=new_session_dying_with_parent
            )
        log.close()

    def raise_if_exited(self) -> None:
        """RuntimeError with the end of etcd's log if the process has exited."""
        assert self._proc is not None, "etcd was not spawned"
        if self._proc.poll() is not None:
            raise RuntimeError(f"etcd exited with {self._proc.returncode}; its log ends:\n"
                               f"{self.log_tail()}")

    def wait_healthy(self, timeout: float) -> None:
        assert self._proc is not None, "etcd was not spawned"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.raise_if_exited()
            if self.healthy():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"etcd did not become healthy within {timeout}s")

    def log_tail(self, lines: int = 20) -> str:
        path = self.log_path or os.path.join(self.data_dir or "", "etcd.log")
        try:
            with open(path, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-lines:])
        except OSError as e:
            return f"(no log: {e})"

    def _tls_args(self) -> list[str]:
        if not self.tls_cert:
            return []
        args = ["--cert-file", self.tls_cert, "--key-file", self.tls_key]
        if self.client_ca:
            args += ["--trusted-ca-file", self.client_ca, "--client-cert-auth"]
        return args

    def healthy(self) -> bool:
        # The plaintext metrics listener serves /health too, TLS or not.
        try:
            # The connection is made from inside the member's namespace.
            with entered(self.netns), urllib.request.urlopen(
                    f"http://{self.host}:{self.metrics_port}/health", timeout=1) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def metrics(self) -> str:
        with entered(self.netns), urllib.request.urlopen(self.metrics_url, timeout=5) as r:
            return str(r.read().decode())

    def pause(self, within: float = 2.0) -> None:
        """SIGSTOP: etcd keeps its sockets open but answers nothing. Returns
        once every thread of it shows stopped (a signal is delivered, not
        applied, by kill(2): on a loaded machine a thread may still answer a
        request sent right after), or raises TimeoutError after ``within``."""
        os.killpg(self.pid, signal.SIGSTOP)
        deadline = time.monotonic() + within
        while not _all_stopped(self.pid):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"etcd (pid {self.pid}) not stopped {within:g}s after SIGSTOP")
            time.sleep(0.005)

    def resume(self) -> None:
        os.killpg(self.pid, signal.SIGCONT)

    def kill(self) -> None:
        """kill -9, keeping the data dir (:meth:`restart` brings it back)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def restart(self, timeout: float = 20.0) -> EtcdServer:
        """Start again on the same ports and data dir (after :meth:`kill`)."""
        if self.running:
            raise RuntimeError(f"etcd member {self.name} is still running")
        return self.start(timeout)

    def is_leader(self) -> bool:
        """This member is the raft leader now (False if it does not answer)."""
        try:
            with entered(self.netns), urllib.request.urlopen(self.metrics_url, timeout=0.5) as r:
                for line in r.read().decode().splitlines():
                    if line.startswith("etcd_server_is_leader "):
                        return float(line.split()[1]) == 1.0
        except OSError:
            pass
        return False

    def stop(self, timeout: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        if self._own_dir and self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class EtcdCluster:
    """``size`` etcd members on loopback forming one cluster.

    Members are addressed by index. ``pause``/``resume`` (SIGSTOP/SIGCONT),
    ``kill`` (kill -9, data kept) and ``restart`` act on one member;
    :meth:`leader` says which member leads now.
    """

    size: int = 3
    host: str = "127.0.0.1"
    name: str = "drover"
    members: list[EtcdServer] = field(default_factory=list)

    def start(self, timeout: float = 30.0) -> EtcdCluster:
        """Start the members (``members`` given: those, with their ports and
        data dirs; else ``size`` members on free ports)."""
        own_ports = not self.members
        if own_ports:
            self.members = [EtcdServer(host=self.host, name=f"{self.name}-{i}")
                            for i in range(self.size)]
        self.size = len(self.members)
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._start_once(timeout)
            except RuntimeError:
                # Ports picked here may be taken between the pick and the
                # bind (seen in CI: a peer port): the whole cluster is
                # started again on fresh ones. Given ports are never changed.
                lost = any(m.lost_port_race() for m in self.members)
                self.stop()
                if not (own_ports and lost) or attempt == PORT_ATTEMPTS - 1:
                    raise
                for m in self.members:
                    m.forget_ports()
                continue
            except BaseException:
                self.stop()
                raise
            return self
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> None:
        token = f"{self.name}-{os.getpid()}-{time.monotonic_ns()}"
        for m in self.members:
            m.cluster_token = token
            m.allocate()
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for m in self.members:
            m.initial_cluster = initial
            m.spawn()
        # Every member watched at once: one that exits (a taken port) fails
        # the start now, not after the others waited out their quorum.
        deadline = time.monotonic() + timeout
        waiting = list(self.members)
        while waiting:
            for m in list(waiting):
                m.raise_if_exited()
                if m.healthy():
                    waiting.remove(m)
            if waiting and time.monotonic() > deadline:
                raise RuntimeError(f"etcd cluster did not become healthy within {timeout}s")
            if waiting:
                time.sleep(0.1)

    @property
    def endpoints(self) -> tuple[str, ...]:
        return tuple(m.endpoint for m in self.members)

    @property
    def endpoint_list(self) -> str:
        """``host:port,host:port,...`` as ``--etcd`` takes it."""
        return ",".join(self.endpoints)

    def member_at(self, endpoint: str) -> int:
        return self.endpoints.index(endpoint)

    def leader(self, timeout: float = 10.0) -> int:
        """The index of the current leader, waiting out an election."""
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.members):
                if m.running and m.is_leader():
                    return i
            if time.monotonic() >= deadline:
                raise RuntimeError(f"no etcd leader within {timeout}s")
            time.sleep(0.05)

    def move_leader(self, i: int, timeout: float = 10.0) -> None:
        """Make member ``i`` the raft leader (etcd's MoveLeader, sent to the
        current leader)."""
        import grpc
        from aetcd import rpc

        deadline = time.monotonic() + timeout
        while True:
            leader = self.leader(timeout)
            if leader == i:
                return
            try:
                with grpc.insecure_channel(self.members[i].endpoint) as ch:
                    target = rpc.MaintenanceStub(ch).Status(rpc.StatusRequest(), timeout=2)
                with grpc.insecure_channel(self.members[leader].endpoint) as ch:
                    rpc.MaintenanceStub(ch).MoveLeader(
                        rpc.MoveLeaderRequest(targetID=target.header.member_id), timeout=5)
            except grpc.RpcError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    def pause(self, i: int) -> None:
        self.members[i].pause()

    def resume(self, i: int) -> None:
        self.members[i].resume()

    def kill(self, i: int) -> None:
        self.members[i].kill()

    def restart(self, i: int, timeout: float = 20.0) -> None:
        self.members[i].restart(timeout)

    def heal(self, timeout: float = 20.0) -> None:
        """Every member running and unfrozen, the cluster healthy again."""
        for m in self.members:
            if m.running:
                with contextlib.suppress(ProcessLookupError):
                    m.resume()
        for m in self.members:
            if not m.running:
                m.start(timeout)
        for m in self.members:
            m.wait_healthy(timeout)

    def stop(self) -> None:
        for m in self.members:
            m.stop()

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _all_stopped(pid: int) -> bool:
    """Every thread of ``pid`` is in state T (stopped) or gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (FileNotFoundError, IndexError):
            continue
        if state not in ("T", "t"):
            return False
    return True

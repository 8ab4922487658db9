"""A real, throwaway etcd on loopback.

Tests (session fixture), benchmarks and `drover dev` all start etcd the same
way: the Debian ``etcd`` binary, a temp data dir, free loopback ports for
client, peer and metrics URLs. The process is put in its own process group
so that stopping it never leaves a child behind; tests may SIGSTOP/SIGCONT it
to simulate a frozen etcd.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

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

    def start(self, timeout: float = 20.0) -> EtcdServer:
        binary = etcd_binary()
        self.client_port = self.client_port or free_port(self.host)
        self.peer_port = self.peer_port or free_port(self.host)
        self.metrics_port = self.metrics_port or free_port(self.host)
        if self.data_dir is None:
            self.data_dir = tempfile.mkdtemp(prefix="drover-etcd-")
            self._own_dir = True
        peer = f"http://{self.host}:{self.peer_port}"
        args = [
            binary,
            "--name", self.name,
            "--data-dir", str(Path(self.data_dir) / "member"),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"{self.name}={peer}",
            "--initial-cluster-state", "new",
            "--listen-metrics-urls", f"http://{self.host}:{self.metrics_port}",
            *self._tls_args(),
            "--logger", "zap",
            "--log-outputs", "stderr",
            *self.extra_args,
        ]
        log = open(self.log_path or os.path.join(self.data_dir, "etcd.log"), "ab")
        env = dict(os.environ, ETCD_UNSUPPORTED_ARCH=os.environ.get("ETCD_UNSUPPORTED_ARCH", ""))
        self._proc = subprocess.Popen(
            args, stdout=log, stderr=log, env=env, preexec_fn=new_session_dying_with_parent
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {self._proc.returncode}; see {self.data_dir}")
            if self.healthy():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"etcd did not become healthy within {timeout}s")

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
            with urllib.request.urlopen(f"http://{self.host}:{self.metrics_port}/health",
                                        timeout=1) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as r:
            return str(r.read().decode())

    def pause(self) -> None:
        """SIGSTOP: etcd keeps its sockets open but answers nothing."""
        os.killpg(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.pid, signal.SIGCONT)

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

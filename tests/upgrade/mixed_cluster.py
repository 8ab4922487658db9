"""A cluster whose processes each run a version of their own.

The processes of `drover dev --replicas 2` (two of every service, the
scheduler worker, simulated nodes), started by the same command lines the
supervisor uses, each by the interpreter of the version it runs
(:class:`old_release.Installed`). :meth:`MixedCluster.replace` stops one
process (SIGTERM, as an operator's rollout does) and starts it again on the
same ports and data with another version, then waits until it serves.
Every process's output goes to ``<log_dir>/<name>.log`` (appended across
versions, each start marked). :meth:`stop` ends everything it started.

Children are spawned without a ``preexec_fn`` (no PR_SET_PDEATHSIG as
`drover dev` gives them): the test process holds gRPC channels, and a
plain fork of it runs gRPC's fork handlers in the child, which abort it
(``epoll_wait error: Bad file descriptor``); without one, subprocess uses
vfork and the child execs at once. The test's ``finally`` stops them.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from old_release import Installed

from drover.dev.etcd import EtcdServer
from drover.dev.ports import wait_for_port
from drover.dev.supervisor import (
    DEV_MAX_TXN_OPS,
    SERVICES,
    SIM_SECRETS_FILE,
    DevLayout,
    free_layout,
    wait_serving,
)

REPLICAS = 2
#: How long a stopped process may take to exit before it is killed (the
#: services' own graceful stop is bounded well under it).
STOP_TIMEOUT = 15.0
START_TIMEOUT = 60.0
#: The order processes are replaced in an upgrade (state first, as the
#: others read it; the clients of the proxies last); a rollback goes in the
#: reverse order.
ORDER = (*(f"state-{r}" for r in range(REPLICAS)), *(f"broker-{r}" for r in range(REPLICAS)),
         *(f"deployments-{r}" for r in range(REPLICAS)), *(f"proxy-{r}" for r in range(REPLICAS)),
         "worker", "sim")
#: The processes that are clients of the proxies.
CLIENTS = ("worker", "sim")


@dataclass
class MixedCluster:
    data_dir: Path
    nodes: int = 6
    layout: DevLayout = field(default_factory=lambda: free_layout()[1])
    etcd: EtcdServer | None = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: The version each process runs now.
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def proxies(self) -> str:
        return ",".join(self.layout.address("proxy", r) for r in range(REPLICAS))

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    def start(self, version: Installed) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.etcd = EtcdServer(data_dir=str(self.data_dir / "etcd"),
                               log_path=str(self.log_dir / "etcd.log"),
                               extra_args=("--max-txn-ops", str(DEV_MAX_TXN_OPS))).start()
        services = [n for n in ORDER if n not in CLIENTS]
        for name in services:
            self._spawn(name, version)
            if name.startswith("state-"):  # the others read it from their first moment
                self._wait_ready(name)
        for name in services:
            self._wait_ready(name)
        for name in CLIENTS:  # they exit when no proxy answers at their start
            self._spawn(name, version)
            self._wait_ready(name)

    def replace(self, name: str, version: Installed) -> float:
        """Stop ``name`` and start it on ``version``; seconds it was away."""
        began = time.monotonic()
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._spawn(name, version)
        self._wait_ready(name)
        return time.monotonic() - began

    def exited(self) -> dict[str, int]:
        """Processes that died on their own: name -> exit code."""
        return {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        if self.etcd is not None:
            self.etcd.stop()
            self.etcd = None

    def argv(self, name: str, version: Installed) -> list[str]:
        """``name``'s command line on ``version``: the supervisor's flags,
        less any that version's command does not have (an older release)."""
        lay = self.layout
        opts: list[tuple[str, str | None]]
        if name == "worker":
            command = ["worker"]
            opts = [("--address", self.proxies), ("--max-txn-ops", str(DEV_MAX_TXN_OPS))]
        elif name == "sim":
            command = ["sim", "nodes", str(self.nodes)]
            opts = [("--address", self.proxies), ("--max-txn-ops", str(DEV_MAX_TXN_OPS)),
                    ("--keep", None),
                    ("--secrets-file", str(self.data_dir / SIM_SECRETS_FILE))]
        else:
            svc, r = name.rsplit("-", 1)
            assert svc in SERVICES and self.etcd is not None
            command = ["serve", svc]
            opts = [("--etcd", self.etcd.endpoint), ("--listen", lay.address(svc, int(r))),
                    ("--replica", name),
                    ("--metrics-listen", f"{lay.host}:{lay.metrics_port(svc, int(r))}"),
                    ("--state-address",
                     ",".join(lay.address("state", i) for i in range(REPLICAS))),
                    ("--session-ttl", "6")]
            if svc in ("state", "broker"):
                opts.append((f"--{svc}-max-txn-ops", str(DEV_MAX_TXN_OPS)))
        known = _help(version.python, tuple(c for c in command if not c.isdigit()))
        out = [version.python, "-m", "drover.cli.main", *command]
        for flag, value in opts:
            if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", known):
                out.extend([flag] if value is None else [flag, value])
        return out

    def _spawn(self, name: str, version: Installed) -> None:
        with open(self.log_dir / f"{name}.log", "ab") as log:
            log.write(f"\n=== {name} starts on drover {version.version}\n".encode())
            log.flush()
            env = {k: v for k, v in os.environ.items()
                   if k != "PYTHONPATH" and not k.startswith("DROVER_")}
            self.procs[name] = subprocess.Popen(
                self.argv(name, version), stdout=log, stderr=subprocess.STDOUT,
                cwd=str(self.data_dir), env=env)
        self.versions[name] = version.version

    def _wait_ready(self, name: str) -> None:
        proc = self.procs[name]
        if name in CLIENTS:
            time.sleep(1.0)  # a client: alive is all there is to see here
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited ({proc.returncode}) at start: "
                                   f"{self.log_tail(name)}")
            return
        svc, r = name.rsplit("-", 1)
        lay = self.layout
        deadline = time.monotonic() + START_TIMEOUT
        while not wait_for_port(lay.host, lay.port(svc, int(r)), 1):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not listen (exit {proc.poll()}): "
                                   f"{self.log_tail(name)}")
        if not wait_serving(lay.address(svc, int(r)), START_TIMEOUT):
            raise RuntimeError(f"{name} did not become SERVING: {self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 15) -> str:
        try:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@functools.cache
def _help(python: str, command: tuple[str, ...]) -> str:
    """``drover <command> --help`` as ``python``'s drover prints it."""
    done = subprocess.run([python, "-m", "drover.cli.main", *command, "--help"],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout

"""A `drover dev` suite for the system tests that drive it as a user would.

:func:`dev_suite` is the idea "start the dev cluster on free ports and wait
until it places work": the proxy listens and every simulated node is
listed. The suite's output goes to ``dev.log`` in the directory given (kept
for a failed test), and it is stopped with SIGTERM (its own bounded stop)
at the end. :class:`Dev` is one `drover dev` run a test drives itself
(restarts, kills its processes, reads its log); :func:`cli` the `drover`
command a user types against it; :func:`started` reads a suite's output
from a pipe until it is up.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from polling import until

from drover.dev.ports import wait_for_port
from drover.dev.supervisor import free_layout

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "drover.cli.main"]


@contextlib.contextmanager
def dev_suite(log_dir: Path, nodes: int, *extra: str) -> Iterator[dict[str, str]]:
    """`drover dev --nodes N` on free ports, ready; the environment for CLI calls."""
    offset, lay = free_layout()
    log = (log_dir / "dev.log").open("w")
    env = {**os.environ, "DROVER_ADDR": lay.address("proxy")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset),
         "--nodes", str(nodes), *extra], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        assert wait_for_port(lay.host, lay.proxy, 60), "the dev suite did not start"
        deadline = time.monotonic() + 60
        while len(_nodes(env)) < nodes:
            assert time.monotonic() < deadline, f"{nodes} simulated nodes not listed in 60 s"
            time.sleep(0.3)
        yield env
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
        log.close()


def _nodes(env: dict[str, str]) -> list[object]:
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", "node", "list", "--json"],
                         env=env, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        return []
    try:
        listed = json.loads(out.stdout)
    except json.JSONDecodeError:
        return []
    return listed if isinstance(listed, list) else []


class Dev:
    """One `drover dev` run on ``offset`` (``extra``: more flags, e.g.
    ``--worker typescript``), its state in ``data_dir``, its output in
    ``log``."""

    def __init__(self, offset: int, log: Path, data_dir: Path, *extra: str) -> None:
        self.log = log
        self.out = log.open("w")
        self.proc = subprocess.Popen(
            [*CLI, "dev", *extra, "--port-offset", str(offset), "--data-dir", str(data_dir)],
            stdout=self.out, stderr=subprocess.STDOUT, cwd=ROOT)

    def text(self) -> str:
        return self.log.read_text()

    def wait_up(self) -> None:
        until(lambda: "drover is up" in self.text() or self.proc.poll() is not None, 120,
              "drover dev up")
        assert "drover is up" in self.text(), self.text()[-3000:]

    def pid(self, name: str) -> int:
        """The pid of the suite's process ``name`` (as its log says)."""
        m = re.search(rf"^{re.escape(name)} .*pid (\d+)\)$", self.text(), re.M)
        assert m, f"no pid for {name}"
        return int(m.group(1))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        finally:
            self.out.close()


Drover = Callable[..., "subprocess.CompletedProcess[str]"]


def cli(env: dict[str, str]) -> Drover:
    """`drover ARGS...` in ``env``, its output captured."""
    def drover(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], env=env, cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
    return drover


def deployment(drover: Drover, dep: str) -> dict[str, Any]:
    """`deployment status --json` of ``dep``; empty while it does not answer."""
    out = drover("deployment", "status", dep, "--json")
    return json.loads(out.stdout) if out.returncode == 0 else {}


def deployment_id(run_output: str) -> str:
    """The deployment id a `job run --detach` printed."""
    m = re.search(r"^Deployment ID: (\S+)$", run_output, re.M)
    assert m, f"no deployment id in {run_output!r}"
    return m.group(1)


def started(proc: subprocess.Popen[str], within: float = 60) -> str:
    """What ``proc`` (`drover dev`, its output on a pipe) printed until
    "drover is up", until it exited, or for ``within`` seconds."""
    lines: list[str] = []
    deadline = time.monotonic() + within
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "drover is up" in line:
            break
    return "".join(lines)

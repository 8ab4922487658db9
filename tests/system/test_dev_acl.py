"""`drover dev --acl`: every service enforces ACLs; the suite bootstraps and
runs its worker and simulated nodes with least-privilege tokens of their
own; anonymous callers are denied; the printed management token works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from dev_suite import started

from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.dev.supervisor import free_layout

pytestmark = pytest.mark.slow


def _drover(*args: str, address: str, token: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    env.update({"DROVER_ADDR": address, "COLUMNS": "200"})
    if token:
        env["DROVER_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args], capture_output=True,
                          text=True, timeout=60, check=False, env=env)


def test_dev_acl_runs_the_suite_with_tokens() -> None:
    offset, lay = free_layout()
    proc = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--acl", "--nodes", "2",
         "--port-offset", str(offset)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        text = started(proc)
        assert "drover is up" in text, text
        secret = next(line.split("DROVER_TOKEN=", 1)[1].strip() for line in text.splitlines()
                      if "DROVER_TOKEN=" in line)
        proxy = lay.address("proxy")
        me = _drover("acl", "token", "self", "--json", address=proxy, token=secret)
        assert me.returncode == 0 and json.loads(me.stdout)["type"] == "management"
        md = (("authorization", f"Bearer {secret}"),)
        with grpc.insecure_channel(proxy) as ch:
            state = state_pb2_grpc.StateServiceStub(ch)
            acl = acl_pb2_grpc.AclServiceStub(ch)
            with pytest.raises(grpc.RpcError) as err:  # anonymous: default deny
                state.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(), timeout=10)
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(grpc.RpcError) as err:
                acl.Bootstrap(acl_pb2.BootstrapRequest(), timeout=10)
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            nodes: list[object] = []
            for _ in range(100):  # the simulated nodes register with their node token
                nodes = list(state.ListNodes(state_pb2.ListNodesRequest(), metadata=md,
                                             timeout=10).nodes)
                if len(nodes) >= 2:
                    break
                time.sleep(0.2)
            assert len(nodes) >= 2
            names = {t.name for t in acl.ListTokens(acl_pb2.ListTokensRequest(), metadata=md,
                                                    timeout=10).tokens}
            assert {"dev-worker", "dev-node"} <= names
        assert proc.poll() is None, "a child of the suite exited"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _up(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "drover.cli.main", "dev", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, started(proc, within=90)


def _down(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_dev_acl_bootstraps_and_keeps_its_tokens_in_the_data_dir(tmp_path: Path) -> None:
    """`drover dev --acl` bootstraps by itself (no `drover acl bootstrap`,
    nodes or not), keeps the management secret in <data-dir>/acl-tokens.json
    (0600), and a restart on the same data dir reuses it."""
    args, proxy = _acl_args(tmp_path, nodes=0)
    proc, text = _up(args)
    try:
        secret = _secret(text)
        path = tmp_path / "acl-tokens.json"
        assert f"also in {path}" in text and json.loads(path.read_text())["management"] == secret
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        _down(proc)
    proc, text = _up(args)
    try:
        assert "drover is up" in text, text
        assert f"already bootstrapped; tokens from {tmp_path / 'acl-tokens.json'}" in text
        assert f"DROVER_TOKEN={secret}" in text
        me = _drover("acl", "token", "self", "--json", address=proxy, token=secret)
        assert me.returncode == 0 and json.loads(me.stdout)["type"] == "management", me.stderr
    finally:
        _down(proc)


def test_dev_acl_restart_keeps_the_simulated_nodes(tmp_path: Path) -> None:
    """Restarted on its data dir, `drover dev --acl` hands the simulated
    nodes the secrets their first registration returned (kept in the data
    dir): they register and heartbeat again, stay ready, and the sim neither
    crash-loops nor prints a traceback."""
    args, proxy = _acl_args(tmp_path, nodes=2)
    proc, text = _up(args)
    try:
        secret = _secret(text)
        _ready_nodes(proxy, secret, 2)
    finally:
        _down(proc)
    assert (tmp_path / "sim-node-secrets.json").stat().st_mode & 0o777 == 0o600
    proc, text = _up(args)
    try:
        assert f"DROVER_TOKEN={secret}" in text, text
        _ready_nodes(proxy, secret, 2)
        time.sleep(5)  # several heartbeats: a refused one would restart the sim
        assert proc.poll() is None
    finally:
        _down(proc)
        assert proc.stdout is not None
        rest = text + proc.stdout.read()
    assert "Traceback" not in rest and "sim exited" not in rest, rest


def _acl_args(data_dir: Path, nodes: int) -> tuple[list[str], str]:
    """`drover dev --acl` on free ports and ``data_dir``: its arguments and
    its proxy's address."""
    offset, lay = free_layout()
    return (["--acl", "--nodes", str(nodes), "--port-offset", str(offset),
             "--data-dir", str(data_dir)], lay.address("proxy"))


def _secret(started: str) -> str:
    """The management secret a started suite printed."""
    assert "drover is up" in started, started
    return started.split("DROVER_TOKEN=", 1)[1].split()[0]


def _ready_nodes(proxy: str, token: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        listed = _drover("node", "list", "--json", address=proxy, token=token)
        ready = [n for n in (json.loads(listed.stdout) if listed.returncode == 0 else [])
                 if n["status"] == "ready"]
        if len(ready) >= count:
            return
        assert time.monotonic() < deadline, listed.stdout + listed.stderr
        time.sleep(0.5)

"""`drover dev --acl`: every service enforces ACLs; the suite bootstraps and
runs its worker and simulated nodes with least-privilege tokens of their
own; anonymous callers are denied; the printed management token works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from dev_suite import Dev

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


def test_dev_acl_runs_the_suite_with_tokens(tmp_path: Path) -> None:
    suite = _Suite(tmp_path, nodes=2)
    dev = suite.up()
    try:
        secret = _secret(dev.text())
        proxy = suite.proxy
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
        assert dev.proc.poll() is None, "a child of the suite exited"
    finally:
        suite.down(dev)


def test_dev_acl_bootstraps_and_keeps_its_tokens_in_the_data_dir(tmp_path: Path) -> None:
    """`drover dev --acl` bootstraps by itself (no `drover acl bootstrap`,
    nodes or not), keeps the management secret in <data-dir>/acl-tokens.json
    (0600), and a restart on the same data dir reuses it."""
    suite = _Suite(tmp_path, nodes=0)
    dev = suite.up()
    try:
        secret = _secret(dev.text())
        path = suite.data_dir / "acl-tokens.json"
        assert f"also in {path}" in dev.text()
        assert json.loads(path.read_text())["management"] == secret
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        suite.down(dev)
    dev = suite.up()
    try:
        text = dev.text()
        assert f"already bootstrapped; tokens from {path}" in text
        assert f"DROVER_TOKEN={secret}" in text
        me = _drover("acl", "token", "self", "--json", address=suite.proxy, token=secret)
        assert me.returncode == 0 and json.loads(me.stdout)["type"] == "management", me.stderr
    finally:
        suite.down(dev)


def test_dev_acl_restart_keeps_the_simulated_nodes(tmp_path: Path) -> None:
    """Restarted on its data dir, `drover dev --acl` hands the simulated
    nodes the secrets their first registration returned (kept in the data
    dir): they register and heartbeat again, stay ready, and the sim neither
    crash-loops nor prints a traceback."""
    suite = _Suite(tmp_path, nodes=2)
    dev = suite.up()
    try:
        secret = _secret(dev.text())
        _ready_nodes(suite.proxy, secret, 2)
    finally:
        suite.down(dev)
    assert (suite.data_dir / "sim-node-secrets.json").stat().st_mode & 0o777 == 0o600
    dev = suite.up()
    try:
        assert f"DROVER_TOKEN={secret}" in dev.text(), dev.text()
        _ready_nodes(suite.proxy, secret, 2)
        time.sleep(5)  # several heartbeats: a refused one would restart the sim
        assert dev.proc.poll() is None
    finally:
        suite.down(dev)
    rest = dev.text()
    assert "Traceback" not in rest and "sim exited" not in rest, rest


class _Suite:
    """`drover dev --acl` on free ports and one data dir, started and
    stopped as a user would (its output in a log file per run)."""

    def __init__(self, tmp_path: Path, nodes: int) -> None:
        self.offset, lay = free_layout()
        self.proxy = lay.address("proxy")
        self.logs, self.data_dir, self.nodes, self.runs = tmp_path, tmp_path / "data", nodes, 0

    def up(self) -> Dev:
        self.runs += 1
        dev = Dev(self.offset, self.logs / f"dev-{self.runs}.log", self.data_dir,
                  "--acl", "--nodes", str(self.nodes))
        dev.wait_up()
        return dev

    def down(self, dev: Dev) -> None:
        """SIGTERM, as Ctrl-C would: the suite stops every child within its
        bound (5 s), so the next `up` finds its ports free."""
        try:
            code = dev.stop()
        except subprocess.TimeoutExpired:
            dev.proc.kill()
            dev.proc.wait()
            pytest.fail(f"drover dev did not stop within 30 s of SIGTERM:\n{dev.text()[-3000:]}")
        assert code == 0, dev.text()[-3000:]


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

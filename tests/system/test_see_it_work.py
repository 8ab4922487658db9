"""A job rolls out with nothing written by hand: `drover dev --nodes 3`
(etcd, the four services, a scheduler worker, three simulated nodes, all
real processes) driven only through the `drover` CLI and the examples."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dev_suite import dev_suite
from polling import until

from drover.state.config import LivenessConfig
from drover.state.nodes.core.liveness import heartbeat_ttl, lease_seconds

_until = functools.partial(until, tolerate=(AssertionError, json.JSONDecodeError))

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: The longest a killed node stays ready in `drover dev`: its longest lease
#: (Nomad's defaults: the 10 s minimum TTL, at most doubled by the stagger,
#: plus the 10 s grace), then the broker's reap check and this test's
#: polling through the CLI on a loaded machine.
DOWN_WITHIN = lease_seconds(heartbeat_ttl(1, LivenessConfig(), 1.0), LivenessConfig()) + 10.0
EX = ROOT / "examples"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with dev_suite(tmp_path_factory.mktemp("dev"), nodes=3) as env:
        yield env


def drover(env: dict[str, str], *args: str,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _json(env: dict[str, str], *args: str) -> Any:
    out = drover(env, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _run(env: dict[str, str], spec: Path) -> dict[str, Any]:
    out: dict[str, Any] = _json(env, "job", "run", "--detach", str(spec))
    return out


def _live(env: dict[str, str], job: str) -> list[dict[str, Any]]:
    allocs: list[dict[str, Any]] = _json(
        env, "alloc", "list", "--filter", f'job_id == "{job}" && desired_status == "run"')
    return allocs


def test_canary_is_placed_healthy_auto_promoted_and_successful(suite: dict[str, str]) -> None:
    first = _run(suite, EX / "canary.yaml")
    assert first["version"] == "0"  # --json prints defaults too
    watch = drover(suite, "job", "status", "web", "--watch", "--json")
    assert watch.returncode == 0, watch.stdout + watch.stderr
    assert json.loads(watch.stdout.splitlines()[-1])["status"] == "successful"
    v2 = _run(suite, EX / "canary-v2.yaml")
    assert v2["version"] == "1"
    watch = drover(suite, "deployment", "status", v2["deployment_id"], "--watch", "--json")
    assert watch.returncode == 0, watch.stdout + watch.stderr
    changes = [json.loads(line) for line in watch.stdout.splitlines()]  # one per change
    groups = [c["groups"][0] for c in changes]
    # the canary alone first, then the rest after the automatic promotion
    assert any(g["canaries"] == "1/1" and g["placed"] == 1 for g in groups), watch.stdout
    assert changes[-1]["status"] == "successful"
    assert groups[-1]["promoted"] == "yes" and groups[-1]["healthy"] == 3
    allocs = _live(suite, "web")
    assert len(allocs) == 3 and all(a.get("job_version") == "1" for a in allocs)
    # promotion clears the canary flag (as Nomad's state store does)
    assert not any(a.get("deployment_status", {}).get("canary", False) for a in allocs)
    # an unchanged re-register starts nothing
    again = _run(suite, EX / "canary-v2.yaml")
    assert again["version"] == "1" and not again.get("deployment_id")


def test_failing_update_auto_reverts(suite: dict[str, str]) -> None:
    _run(suite, EX / "rolling.yaml")
    assert drover(suite, "job", "status", "api", "--watch").returncode == 0
    broken = _run(suite, EX / "rolling-broken.yaml")
    watch = drover(suite, "deployment", "status", broken["deployment_id"], "--watch")
    assert watch.returncode == 1
    assert "rolling back to job version 0" in watch.stdout
    assert max(len(line) for line in watch.stdout.splitlines()) <= 80
    # the revert is version 2 (the spec of version 0), rolled out and stable
    job = _until(lambda: (j := _json(suite, "job", "status", "api"))["job"].get("stable")
                 and j["job"].get("version") == "2" and j, 60, "api reverted and stable")
    assert job["job"]["task_groups"][0]["tasks"][0]["config"]["image"] == "api:1.0"
    allocs = _until(lambda: (a := _live(suite, "api")) and len(a) == 3 and all(
        x.get("client_status") == "running" for x in a) and a,
        60, "3 running allocations of the reverted version")
    assert {a["job_version"] for a in allocs} <= {"0", "2"}


def test_blocked_evaluation_is_unblocked_when_a_node_joins(suite: dict[str, str]) -> None:
    spec = {"id": "huge", "type": "JOB_TYPE_SERVICE", "datacenters": ["dc1"], "task_groups": [{
        "name": "g", "count": 1, "tasks": [{"name": "t", "driver": "sim",
                                              "resources": {"cpu": 9000, "memory_mb": 100}}]}]}
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"huge-{os.getpid()}.json"
    path.write_text(json.dumps(spec))
    _run(suite, path)
    _until(lambda: any(e.get("status") == "blocked" for e in _json(
        suite, "eval", "list", "--filter", 'job_id == "huge"')), 30, "a blocked evaluation")
    assert not _live(suite, "huge")
    big = subprocess.Popen([sys.executable, "-m", "drover.cli.main", "sim", "nodes", "1",
                            "--prefix", "big", "--cpu", "16000"], env=suite,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        allocs = _until(lambda: (a := _live(suite, "huge")) and a[0].get(
            "client_status") == "running" and a, 30, "huge placed")
        assert allocs[0]["node_id"] == "big-0"
    finally:
        big.send_signal(signal.SIGTERM)  # marks big-0 down: huge has nowhere to go
        big.wait(15)


def test_node_down_replaces_its_allocations(suite: dict[str, str]) -> None:
    _run(suite, EX / "batch.yaml")  # takes room everywhere; completes
    web = _live(suite, "web") or _until(lambda: _live(suite, "web"), 30, "web allocations")
    victim = web[0]["node_id"]
    down = drover(suite, "node", "down", victim)
    assert down.returncode == 0 and "allocations lost" in down.stdout
    allocs = _until(lambda: (a := _live(suite, "web")) and len(a) == 3 and all(
        x["node_id"] != victim and x.get("client_status") == "running"
        for x in a) and a, 60, f"web replaced off {victim}")
    assert len({a["id"] for a in allocs} & {a["id"] for a in web}) < 3
    assert drover(suite, "node", "ready", victim).returncode == 0


def test_a_killed_node_misses_its_heartbeats_and_its_allocation_is_replaced(
        suite: dict[str, str]) -> None:
    def sim(prefix: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "drover.cli.main", "sim", "nodes", "1",
                                 "--prefix", prefix, "--datacenter", "dc9"], env=suite,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    doomed = sim("doomed")
    rescue = None
    try:
        _until(lambda: any(n["id"] == "doomed-0" for n in _json(suite, "node", "list")), 30,
               "doomed-0 registered")
        spec = {"id": "lonely", "type": "JOB_TYPE_SERVICE", "datacenters": ["dc9"],
                "task_groups": [{"name": "g", "count": 1,
                                 "tasks": [{"name": "t", "driver": "sim"}]}]}
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"lonely-{os.getpid()}.json"
        path.write_text(json.dumps(spec))
        _run(suite, path)
        first = _until(lambda: (a := _live(suite, "lonely")) and a[0].get(
            "client_status") == "running" and a[0], 30, "lonely running")
        assert first["node_id"] == "doomed-0"
        doomed.send_signal(signal.SIGKILL)  # no goodbye: only its silence tells
        doomed.wait(5)
        _until(lambda: next(n for n in _json(suite, "node", "list") if n["id"] == "doomed-0")
               .get("status") == "down", 30, "doomed-0 marked down")
        lost = _json(suite, "alloc", "status", first["id"])
        assert lost["client_status"] == "lost"
        rescue = sim("rescue")  # the replacement was blocked: dc9 had no node left
        again = _until(lambda: (a := _live(suite, "lonely")) and a[0].get(
            "client_status") == "running" and a[0], 30, "lonely replaced")
        assert again["node_id"] == "rescue-0" and again["id"] != first["id"]
    finally:
        if doomed.poll() is None:
            doomed.kill()
        if rescue is not None:
            rescue.send_signal(signal.SIGTERM)
            rescue.wait(15)

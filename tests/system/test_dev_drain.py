"""A drain migrates, it is no outage: on `drover dev --nodes 3` (real
processes), a node holding all three allocations of a group with
``migrate.max_parallel: 1`` is drained with `drover node drain --monitor`,
and at no moment are more than one of the three down (not running healthy);
the drain completes, the node stays ineligible, and `drover node
eligibility --enable` takes it back."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dev_suite import dev_suite
from polling import until

pytestmark = pytest.mark.slow

SPEC = """
id: drainme
type: service
datacenters: [dc1]
task_groups:
  - name: web
    count: 3
    migrate: {max_parallel: 1, min_healthy_time: 1s, healthy_deadline: 30s}
    tasks:
      - name: web
        driver: sim
        resources: {cpu: 100, memory_mb: 64}
"""


def drover(env: dict[str, str], *args: str, timeout: float = 60) -> Any:
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", *args, "--json"], env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    if "--monitor" in args:  # a watch: one JSON object per line
        return {"events": [json.loads(line) for line in out.stdout.splitlines()]}
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with dev_suite(tmp_path_factory.mktemp("dev"), nodes=3) as env:
        yield env


def _up(allocs: list[dict[str, Any]]) -> int:
    return sum(1 for a in allocs if a.get("desired_status") == "run"
               and a.get("client_status") == "running"
               and a.get("deployment_status", {}).get("healthy") is True)


def test_a_drain_never_has_more_than_max_parallel_down(suite: dict[str, str],
                                                       tmp_path: Path) -> None:
    env = suite
    nodes = sorted(n["id"] for n in drover(env, "node", "list"))
    target, others = nodes[0], nodes[1:]
    for n in others:  # everything lands on the target first
        drover(env, "node", "eligibility", n, "--disable")
    spec = tmp_path / "drainme.yaml"
    spec.write_text(SPEC)
    drover(env, "job", "run", "--detach", str(spec))
    allocs_of = lambda: drover(env, "alloc", "list", "--filter",  # noqa: E731
                               'job_id == "drainme"')
    until(lambda: _up(allocs_of()) == 3, 60, "three healthy allocations")
    assert {a["node_id"] for a in allocs_of()} == {target}
    for n in others:
        drover(env, "node", "eligibility", n, "--enable")

    low, stop = [3], threading.Event()

    def watch() -> None:  # samples the group while the drain runs
        while not stop.is_set():
            low[0] = min(low[0], _up(allocs_of()))

    sampler = threading.Thread(target=watch, daemon=True)
    sampler.start()
    try:
        started = time.monotonic()
        out = drover(env, "node", "drain", target[:6], "--deadline", "5m", "--monitor",
                     timeout=120)
        took = time.monotonic() - started
    finally:
        stop.set()
        sampler.join(10)
    kinds = [e["event"] for e in out["events"]]
    assert kinds.count("marked") == 3 and kinds[-1] == "complete", kinds
    marked_at = [e["t"] for e in out["events"] if e["event"] == "marked"]
    assert marked_at == sorted(marked_at) and marked_at[2] - marked_at[0] >= 2.0, \
        f"marked one at a time, each after a healthy replacement: {marked_at}"
    assert low[0] >= 2, f"{3 - low[0]} of 3 down at once during the drain"
    live = [a for a in allocs_of() if a["desired_status"] == "run"]
    assert len(live) == 3 and target not in {a["node_id"] for a in live}
    node = drover(env, "node", "status", target)["node"]
    assert node.get("scheduling_eligibility") == "ineligible"
    assert node.get("last_drain", {}).get("status") == "complete"
    assert "drain_strategy" not in node
    evals = drover(env, "eval", "list", "--filter", 'triggered_by == "node-drain"')
    assert len(evals) >= 3
    drover(env, "node", "eligibility", target, "--enable")
    node = drover(env, "node", "status", target)["node"]
    assert node.get("scheduling_eligibility") == "eligible"
    print(f"drain of 3 allocations (max_parallel 1, min_healthy_time 1s): {took:.1f}s")

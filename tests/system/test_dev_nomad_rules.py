"""Issue 40's rules where drover differed from Nomad, driven as its repros
do: `drover dev --nodes 3` (etcd, the four services, a worker, simulated
nodes: real processes) and the `drover` CLI only. Each test names the Nomad
function whose rule it checks. (Items 4 and 5, purge and alloc stop, are in
test_job_lifecycle.py; item 7, ACL names, in
tests/integration/acl/test_acl_cluster.py.)"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dev_suite import dev_suite

pytestmark = pytest.mark.slow

RESOURCES = {"cpu": 100, "memory_mb": 64}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with dev_suite(tmp_path_factory.mktemp("dev"), nodes=3) as env:
        yield env


def _json(env: dict[str, str], *args: str, timeout: float = 60) -> Any:
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", *args, "--json"], env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _until(check: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            got = check()
        except (AssertionError, json.JSONDecodeError):
            got = None
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"not within {within}s: {what}")


def _run(env: dict[str, str], tmp: Path, job: dict[str, Any]) -> Any:
    path = tmp / f"{job['id']}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(job))
    return _json(env, "job", "run", "--detach", str(path))


def _allocs(env: dict[str, str], job_id: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = _json(env, "alloc", "list", "--filter", f'job_id == "{job_id}"')
    return got


def _group(name: str, count: int, **extra: Any) -> dict[str, Any]:
    config = extra.pop("config", {})
    return {"name": name, "count": count, **extra,
            "tasks": [{"name": "t", "driver": "sim", "resources": RESOURCES,
                       "config": config}]}


def _drain_events(env: dict[str, str], node: str) -> list[dict[str, Any]]:
    """`node drain --monitor --json`'s events: one object holding them, or
    one object per line."""
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", "node", "drain", node,
                          "--deadline", "2m", "--monitor", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    try:
        events: list[dict[str, Any]] = json.loads(out.stdout)["events"]
    except json.JSONDecodeError:
        events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return events


def _status(env: dict[str, str], job_id: str) -> str:
    return str(_json(env, "job", "status", job_id)["job"]["status"])


def test_a_drain_of_a_never_healthy_group_moves_one_per_max_parallel(
        suite: dict[str, str], tmp_path: Path) -> None:
    """Item 1, the issue's repro. Nomad's reconciler keeps a running
    allocation untainted (``filterByRescheduleable``/``shouldFilter``), marked
    to reschedule by the watcher or not, so a never-healthy group is not
    replaced every healthy_deadline. A drain moves one per
    ``migrate.max_parallel``: Nomad's drainer (``handleTaskGroup``) counts an
    allocation whose health is known, healthy or not, so the next moves once
    the previous replacement reported. Was: every allocation stopped and
    replaced within a second ("alloc was rescheduled because it failed"),
    and again every healthy_deadline."""
    env = suite
    nodes = sorted(n["id"] for n in _json(env, "node", "list"))
    target, others = nodes[0], nodes[1:]
    for n in others:  # all on one node
        _json(env, "node", "eligibility", n, "--disable")
    group = _group("g", 3, meta={"sim.outcome": "never_healthy"},
                   migrate={"max_parallel": 1, "min_healthy_time": "1s",
                            "healthy_deadline": "3s"},
                   update={"max_parallel": 3, "min_healthy_time": "1s",
                           "healthy_deadline": "3s", "progress_deadline": "5m"})
    _run(env, tmp_path, {"id": "sickly", "type": "service", "task_groups": [group]})
    try:
        _until(lambda: sum(a.get("deployment_status", {}).get("healthy") is False
                           for a in _allocs(env, "sickly")) == 3, 60, "three unhealthy")
        for n in others:
            _json(env, "node", "eligibility", n, "--enable")
        time.sleep(4)  # more than a healthy_deadline: nothing is replaced for it
        assert len(_allocs(env, "sickly")) == 3
        events = _drain_events(env, target[:8])
        marked_at = [e["t"] for e in events if e["event"] == "marked"]
        assert len(marked_at) == 3, events
        gaps = [b - a for a, b in itertools.pairwise(marked_at)]
        assert all(g >= 2.5 for g in gaps), f"one at a time, after a health report: {gaps}"
        allocs = _allocs(env, "sickly")
        assert len(allocs) == 6, allocs  # three moved, none replaced for being unhealthy
        moved = [a for a in allocs if a["node_id"] == target]
        assert all(a["desired_description"] == "alloc is being migrated" for a in moved)
        assert not any(a.get("desired_description", "").startswith("alloc was rescheduled")
                       for a in allocs)
        by_id = {a["id"]: a for a in allocs}
        for a in moved:  # linked both ways
            assert by_id[a["next_allocation"]]["previous_allocation"] == a["id"]
    finally:
        for n in nodes:
            _json(env, "node", "eligibility", n, "--enable")
        _json(env, "job", "stop", "sickly", "--purge")


def test_job_status_counts_evaluations(suite: dict[str, str], tmp_path: Path) -> None:
    """Item 2, Nomad's ``getJobStatus``: a non-terminal allocation → running;
    else a non-terminal evaluation → pending; else dead. A job whose only
    allocation failed, its reschedule due later, is pending (was: a batch
    job dead); once its policy is spent it is dead (was: a service pending
    forever)."""
    # A 20s delay: the window in which it must read pending, wide enough
    # for CLI calls on a loaded machine.
    policy = {"attempts": 1, "interval": "1h", "delay": "20s", "delay_function": "constant",
              "unlimited": False}
    for kind in ("service", "batch"):
        job_id = f"doomed-{kind}"
        group = _group("g", 1, meta={"sim.outcome": "fail"}, reschedule=policy)
        _run(suite, tmp_path, {"id": job_id, "type": kind, "task_groups": [group]})
        seen: list[str] = []

        def failed_once_then(want: str, job_id: str = job_id, seen: list[str] = seen) -> bool:
            allocs = _allocs(suite, job_id)
            status = _status(suite, job_id)
            seen.append(status)
            return (status == want
                    and sum(a["client_status"] == "failed" for a in allocs) >= 1)

        _until(lambda: failed_once_then("pending"), 30, f"{kind}: pending while it waits")
        assert all(a["client_status"] in ("failed", "pending") or a["desired_status"] == "stop"
                   for a in _allocs(suite, job_id))
        _until(lambda: failed_once_then("dead") and len(_allocs(suite, job_id)) == 2,  # noqa: B023
               60, f"{kind}: dead once its policy is spent")
        time.sleep(2)
        assert _status(suite, job_id) == "dead", kind


def test_deployment_counters_accumulate(suite: dict[str, str], tmp_path: Path) -> None:
    """Item 3, Nomad's ``updateDeploymentWithAlloc``: the deployment counts
    every placement and every health report of its allocations, so a group
    whose allocations keep failing (each replaced by the reschedule policy)
    shows Placed = its allocations, Unhealthy = their unhealthy reports.
    Was: Placed 1 Healthy 0 Unhealthy 0 after 5 placements."""
    group = _group("g", 1, meta={"sim.outcome": "fail"},
                   reschedule={"delay": "5s", "delay_function": "constant", "unlimited": True},
                   update={"max_parallel": 1, "min_healthy_time": "1s",
                           "healthy_deadline": "30s", "progress_deadline": "10m"})
    ran = _run(suite, tmp_path, {"id": "flaky", "type": "service", "task_groups": [group]})
    dep_id = ran["deployment_id"]

    def counted() -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        mine = [a for a in _allocs(suite, "flaky") if a.get("deployment_id") == dep_id]
        dep = _json(suite, "deployment", "status", dep_id)
        g = dep["task_groups"]["g"]
        unhealthy = sum(a.get("deployment_status", {}).get("healthy") is False for a in mine)
        if (len(mine) >= 3 and int(g.get("placed_allocs", 0)) == len(mine)
                and int(g.get("unhealthy_allocs", 0)) == unhealthy >= 2):
            return dep, mine
        return None

    dep, _ = _until(counted, 60, "three placements counted")
    assert dep["status"] == "running"  # the progress deadline decides, not the count
    _json(suite, "job", "stop", "flaky", "--purge")


def test_canaries_reuse_the_index_being_replaced(suite: dict[str, str],
                                                tmp_path: Path) -> None:
    """Item 6, Nomad's ``NextCanaries``: the canary of a count-3 group takes
    an index being replaced (0-2), not web.frontend[3]; after promotion no
    two allocations meant to run share a name."""
    def job(image: str) -> dict[str, Any]:
        group = _group("frontend", 3, config={"image": image},
                       update={"max_parallel": 1, "canary": 1, "min_healthy_time": "1s",
                               "healthy_deadline": "20s", "progress_deadline": "1m"})
        return {"id": "web", "type": "service", "task_groups": [group]}

    first = _run(suite, tmp_path, job("web:1"))
    _until(lambda: _json(suite, "deployment", "status", first["deployment_id"])["status"]
           == "successful", 60, "version 0 rolled out")
    second = _run(suite, tmp_path, job("web:2"))
    canaries = _until(lambda: [a for a in _allocs(suite, "web")
                               if a.get("deployment_status", {}).get("canary")
                               and a.get("deployment_status", {}).get("healthy")], 60,
                      "a healthy canary")
    (canary,) = canaries
    assert canary["name"] in {f"web.frontend[{i}]" for i in range(3)}, canary["name"]
    _json(suite, "deployment", "promote", second["deployment_id"])
    _until(lambda: _json(suite, "deployment", "status", second["deployment_id"])["status"]
           == "successful", 90, "version 1 rolled out")
    live = [a for a in _allocs(suite, "web") if a.get("desired_status") == "run"]
    assert sorted(a["name"] for a in live) == [f"web.frontend[{i}]" for i in range(3)]

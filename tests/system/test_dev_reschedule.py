"""Failed allocations rescheduled by the task group's policy, on `drover dev`
(etcd, the four services, a worker, three simulated nodes: real processes),
driven through the `drover` CLI.

- a service whose tasks crash (``sim.outcome: crash``) keeps its count: each
  crashed allocation is replaced after the policy's delay (5s, Nomad's
  minimum), by one naming it in ``previous_allocation`` and carrying the
  reschedule tracker;
- a failing batch job (``sim.outcome: fail``) gets exactly its attempts
  (Nomad's batch default: 1 reschedule), then no more.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from dev_suite import dev_suite
from polling import until

_until = functools.partial(until, tolerate=(AssertionError, json.JSONDecodeError))

pytestmark = pytest.mark.slow

DELAY = 5.0  # the policy's delay in both jobs (Nomad's minimum)
SLACK = 3.0  # worker, broker timer, sim start: what a reschedule may take beyond it


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with dev_suite(tmp_path_factory.mktemp("dev"), nodes=3) as env:
        yield env


def _json(env: dict[str, str], *args: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", *args, "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _allocs(env: dict[str, str], job: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = _json(env, "alloc", "list", "--filter", f'job_id == "{job}"')
    return got


def _spec(tmp: Path, job: dict[str, Any]) -> str:
    path = tmp / f"{job['id']}.json"
    path.write_text(json.dumps(job))
    return str(path)


def _job(job_id: str, kind: str, count: int, meta: dict[str, str],
         reschedule: dict[str, Any]) -> dict[str, Any]:
    return {"id": job_id, "type": kind, "datacenters": ["dc1"], "task_groups": [{
        "name": "g", "count": count, "meta": meta, "reschedule": reschedule,
        "tasks": [{"name": "t", "driver": "sim", "resources": {"cpu": 100, "memory_mb": 64}}]}]}


def test_crashing_service_keeps_its_count_and_failing_batch_gets_its_attempts(
        suite: dict[str, str], tmp_path: Path) -> None:
    crashy = _job("crashy", "service", 2, {"sim.outcome": "crash", "sim.crash_after": "1"},
                  {"delay": "5s", "delay_function": "constant"})
    flaky = _job("flaky", "batch", 1, {"sim.outcome": "fail"}, {})  # batch default: 1 attempt
    _json(suite, "job", "run", "--detach", _spec(tmp_path, crashy))
    _json(suite, "job", "run", "--detach", _spec(tmp_path, flaky))
    started = time.monotonic()

    # The service: never more than its count meant to run, and replacements
    # chained through previous_allocation, each after the policy's delay.
    def rescheduled_twice() -> list[dict[str, Any]] | None:
        allocs = _allocs(suite, "crashy")
        running = [a for a in allocs if a.get("desired_status", "run").lower().endswith("run")]
        assert len(running) <= 2, running
        chained = [a for a in allocs if a.get("previous_allocation")]
        return allocs if len(chained) >= 4 else None  # two rounds for both slots

    allocs = _until(rescheduled_twice, 4 * (DELAY + SLACK) + 10, "two reschedules per slot")
    by_id = {a["id"]: a for a in allocs}
    for a in allocs:
        prev = by_id.get(a.get("previous_allocation", ""))
        if prev is None:
            continue
        assert prev.get("next_allocation") == a["id"]
        assert prev["client_status"].lower().endswith("failed")
        waited = _ts(a["create_time"]) - _ts(prev["finished_at"])
        assert DELAY - 0.5 <= waited <= DELAY + SLACK, (waited, a, prev)
        events = a["reschedule_tracker"]["events"]
        assert events[-1]["prev_alloc_id"] == prev["id"] and events[-1]["delay"] == "5s"
        assert a["name"] == prev["name"]  # the slot is kept

    # The batch job: its one allocation and one reschedule, then no more.
    def two_failed() -> list[dict[str, Any]] | None:
        got = _allocs(suite, "flaky")
        failed = [a for a in got if a["client_status"].lower().endswith("failed")]
        return got if len(failed) == 2 else None

    flaky_allocs = _until(two_failed, max(0.0, 2 * (DELAY + SLACK) + 5
                                          - (time.monotonic() - started)) + 1,
                          "the batch job's attempt")
    time.sleep(DELAY + SLACK)  # long enough for a (wrong) third one
    flaky_allocs = _allocs(suite, "flaky")
    assert len(flaky_allocs) == 2, flaky_allocs
    second = next(a for a in flaky_allocs if a.get("previous_allocation"))
    assert len(second["reschedule_tracker"]["events"]) == 1


def test_a_never_healthy_rollout_runs_on_until_its_progress_deadline(
        suite: dict[str, str], tmp_path: Path) -> None:
    """``sim.outcome: never_healthy``: the allocation runs but is unhealthy at
    its healthy_deadline. With a progress deadline and attempts left the
    deployment watcher marks it to reschedule, but Nomad's reconciler keeps
    a running allocation untainted (``filterByRescheduleable``/
    ``shouldFilter``: only failed or lost ones are rescheduled), so it runs
    on, never replaced, until the progress deadline fails the deployment.
    Updated to Nomad's rule (issue 40 item 1; was: replaced at once until
    the policy's attempts were spent)."""
    sickly = _job("sickly", "service", 1, {"sim.outcome": "never_healthy"},
                  {"attempts": 2, "interval": "1h", "delay": "5s",
                   "delay_function": "constant", "unlimited": False})
    sickly["task_groups"][0]["update"] = {
        "max_parallel": 1, "min_healthy_time": "1s", "healthy_deadline": "2s",
        "progress_deadline": "10s"}
    _json(suite, "job", "run", "--detach", _spec(tmp_path, sickly))

    def failed_deployment() -> dict[str, Any] | None:
        deps = _json(suite, "deployment", "list")
        mine = [d for d in deps if d.get("job_id") == "sickly"]
        return mine[0] if mine and mine[0]["status"].lower().endswith("failed") else None

    dep = _until(failed_deployment, 40, "the deployment failing by its progress deadline")
    assert dep["status_description"].startswith("Failed due to progress deadline"), dep
    (alloc,) = _allocs(suite, "sickly")  # never replaced
    assert alloc["desired_status"].lower().endswith("run"), alloc
    assert alloc["deployment_status"]["healthy"] is False
    assert not alloc.get("next_allocation")

"""A job's life as a Nomad user drives it, on `drover dev --nodes 2` (real
processes, the CLI only): its status moves pending -> running -> dead, a
stop cancels its deployment as Nomad says, `job start` runs it again; the
per-group summary is kept by the state service as the allocation moves."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dev_suite import dev_suite
from polling import until

_until = functools.partial(until, tolerate=(AssertionError, json.JSONDecodeError))

pytestmark = pytest.mark.slow

#: No datacenters, no count, an update block with one field: Nomad's
#: defaults fill in the rest (count 1, every datacenter). Two minutes of
#: health keep the deployment running when the test stops the job.
SPEC: dict[str, Any] = {"id": "life", "task_groups": [{
    "name": "g", "update": {"min_healthy_time": "2m"},
    "tasks": [{"name": "t", "driver": "sim", "resources": {"cpu": 100, "memory_mb": 64}}],
}]}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with dev_suite(tmp_path_factory.mktemp("dev"), nodes=2) as env:
        yield env


def drover(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def _json(env: dict[str, str], *args: str) -> Any:
    out = drover(env, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _job(env: dict[str, str]) -> dict[str, Any]:
    job: dict[str, Any] = _json(env, "job", "status", "life")["job"]
    return job


def test_status_pending_running_dead_stop_cancels_the_deployment_and_start_runs_it_again(
    suite: dict[str, str], tmp_path: Path,
) -> None:
    spec = tmp_path / "life.json"
    spec.write_text(json.dumps(SPEC))
    assert drover(suite, "operator", "scheduler", "pause").returncode == 0
    try:
        run = _json(suite, "job", "run", "--detach", str(spec))
        job = _job(suite)
        assert job["status"] == "pending"  # nothing can be placed while paused
        assert job["datacenters"] == ["*"] and job["task_groups"][0]["count"] == 1
        assert job["task_groups"][0]["update"]["max_parallel"] == 1
        assert job["task_groups"][0]["update"]["progress_deadline"] == "600s"
    finally:
        assert drover(suite, "operator", "scheduler", "resume").returncode == 0
    _until(lambda: _job(suite)["status"] == "running", 30, "life running")
    # the summary the state service keeps: the one allocation, starting then running
    summary = _until(lambda: (g := _job(suite)["summary"]["g"])["running"] == 1 and g, 30,
                     "the summary counts it running")
    assert (summary["queued"], summary["starting"], summary["failed"]) == (0, 0, 0)
    text = drover(suite, "job", "status", "life").stdout
    assert "Summary" in text and "Starting" in text, text

    stop = _json(suite, "job", "stop", "life")
    assert stop["eval_id"]
    dep = _json(suite, "deployment", "status", run["deployment_id"])
    assert dep["status"] == "cancelled"
    assert dep["status_description"] == "Cancelled because job is stopped"
    _until(lambda: _job(suite)["status"] == "dead", 30, "life dead")
    out = drover(suite, "job", "status", "life")
    assert "dead (stopped)" in out.stdout, out.stdout

    again = drover(suite, "job", "start", "life", "--json")
    assert again.returncode == 0, again.stderr
    started = json.loads(again.stdout)
    assert started["version"] == "2" and started.get("from_version", "0") == "0"
    _until(lambda: (j := _job(suite))["status"] == "running" and not j.get("stop"),
           30, "life running again")
    refused = drover(suite, "job", "start", "life")
    said = " ".join(refused.stderr.split())
    assert refused.returncode != 0 and "not stopped" in said, said


def test_check_index_registers_only_at_the_index_read(suite: dict[str, str],
                                                     tmp_path: Path) -> None:
    spec = tmp_path / "guarded.json"
    spec.write_text(json.dumps({**SPEC, "id": "guarded"}))
    first = _json(suite, "job", "run", "--detach", "--check-index", "0", str(spec))
    index = first["job_modify_index"]
    stale = drover(suite, "job", "run", "--detach", "--check-index", "0", str(spec))
    said = " ".join(stale.stderr.split())  # the console wraps long lines
    assert stale.returncode != 0
    assert "Enforcing job modify index 0: job already exists" in said, said
    assert f"--check-index {index}" in said
    spec.write_text(json.dumps({**SPEC, "id": "guarded", "priority": 60}))
    again = _json(suite, "job", "run", "--detach", "--check-index", index, str(spec))
    assert again["version"] == "1"
    late = drover(suite, "job", "run", "--detach", "--check-index", index, str(spec))
    said = " ".join(late.stderr.split())
    assert late.returncode != 0
    assert "job exists with conflicting job modify index" in said, said


def test_history_shows_the_diff_and_revert_restores_a_versions_spec(
    suite: dict[str, str], tmp_path: Path,
) -> None:
    spec = tmp_path / "rev.json"
    for image in ("rev:1", "rev:2"):
        group = {**SPEC["task_groups"][0]}
        group["tasks"] = [{"name": "t", "driver": "sim", "config": {"image": image}}]
        spec.write_text(json.dumps({"id": "rev", "task_groups": [group]}))
        _json(suite, "job", "run", "--detach", str(spec))
    history = drover(suite, "job", "history", "rev", "--diff")
    assert history.returncode == 0, history.stderr
    assert '+/- task_groups[g].tasks[t].config.image: "rev:1" => "rev:2"' in history.stdout
    reverted = _json(suite, "job", "revert", "rev", "0")
    assert (reverted["version"], reverted["reverted_to"]) == ("2", "0")
    job = _json(suite, "job", "status", "rev")["job"]
    assert job["version"] == "2"
    assert job["task_groups"][0]["tasks"][0]["config"]["image"] == "rev:1"
    same = drover(suite, "job", "revert", "rev", "2")
    assert same.returncode != 0 and "can't revert to current version" in same.stderr


def test_scale_sets_a_groups_count_and_the_scheduler_follows(suite: dict[str, str],
                                                            tmp_path: Path) -> None:
    spec = tmp_path / "scaled.json"
    spec.write_text(json.dumps({**SPEC, "id": "scaled"}))
    _json(suite, "job", "run", "--detach", str(spec))
    scaled = _json(suite, "job", "scale", "scaled", "g", "3")
    assert (scaled["previous_count"], scaled["version"]) == (1, "1")
    _until(lambda: len(_json(suite, "alloc", "list", "--filter",
                             'job_id == "scaled" && desired_status == "run"')) == 3,
           30, "3 allocations of scaled")
    bad = drover(suite, "job", "scale", "scaled", "nope", "2")
    assert bad.returncode != 0 and "does not exist" in " ".join(bad.stderr.split())


def test_alloc_stop_is_replaced_by_the_scheduler(suite: dict[str, str], tmp_path: Path) -> None:
    """Issue 40 item 5, Nomad's ``Alloc.Stop``: a stop is a migration
    (``DesiredTransition.Migrate``): the scheduler stops it ("alloc is being
    migrated") and places a replacement with its name, linked both ways
    (previous_allocation / next_allocation). Was: unlinked."""
    spec = tmp_path / "one.json"
    spec.write_text(json.dumps({**SPEC, "id": "one"}))
    _json(suite, "job", "run", "--detach", str(spec))
    live = 'job_id == "one" && desired_status == "run"'
    (first,) = _until(lambda: _json(suite, "alloc", "list", "--filter", live), 30, "one placed")
    stopped = _json(suite, "alloc", "stop", first["id"])
    assert stopped["eval_id"]
    (second,) = _until(lambda: [a for a in _json(suite, "alloc", "list", "--filter", live)
                                if a["id"] != first["id"]], 30, "a replacement")
    assert second["task_group"] == first["task_group"] and second["name"] == first["name"]
    assert second["previous_allocation"] == first["id"]
    gone = _json(suite, "alloc", "status", first["id"])
    assert gone["desired_status"] == "stop" and gone["next_allocation"] == second["id"]
    assert gone["desired_description"] == "alloc is being migrated"
    again = drover(suite, "alloc", "stop", first["id"])
    assert again.returncode != 0 and "nothing to stop" in " ".join(again.stderr.split())


@pytest.mark.parametrize("kind", ["batch", "system"])
def test_alloc_stop_of_a_batch_or_system_allocation_is_linked_too(
    suite: dict[str, str], tmp_path: Path, kind: str,
) -> None:
    """Issue 40 item 5 for every job type, Nomad's ``Alloc.Stop``: the
    transition is ``Migrate`` whatever the type (only the drainer's
    ``drainAllocs`` adds ``MigrateDisablePlacement``, to a batch one), so the
    batch reconciler migrates it as a service's, and the system scheduler
    chains the node's new allocation to the stopped one (``PreviousAllocation``;
    a system one is replaced on its node). Was: stopped by the state service,
    the replacement unlinked."""
    job_id = f"stop-{kind}"
    spec = tmp_path / f"{job_id}.json"
    spec.write_text(json.dumps({
        "id": job_id, "type": kind, "task_groups": [{
            "name": "g", "meta": {"sim.run_for": "600"},
            "tasks": [{"name": "t", "driver": "sim",
                       "resources": {"cpu": 50, "memory_mb": 32}}]}]}))
    _json(suite, "job", "run", "--detach", str(spec))
    live = f'job_id == "{job_id}" && desired_status == "run"'
    first = _until(lambda: [a for a in _json(suite, "alloc", "list", "--filter", live)
                            if a["client_status"] == "running"], 30, f"{kind} running")[0]
    stopped = _json(suite, "alloc", "stop", first["id"])
    assert stopped["eval_id"]
    (second,) = _until(lambda: [a for a in _json(suite, "alloc", "list", "--filter", live)
                                if a.get("previous_allocation") == first["id"]],
                       30, f"the {kind} replacement")
    assert second["name"] == first["name"]
    if kind == "system":
        assert second["node_id"] == first["node_id"]
    gone = _json(suite, "alloc", "status", first["id"])
    assert gone["desired_status"] == "stop" and gone["next_allocation"] == second["id"]
    assert gone["desired_description"] == "alloc is being migrated"
    _json(suite, "job", "stop", job_id, "--purge")


def test_purge_of_a_running_job_deletes_it_at_once(
    suite: dict[str, str], tmp_path: Path,
) -> None:
    """Issue 40 item 4, Nomad's ``Job.Deregister`` with purge (``DeleteJob``
    in the txn of the deregister evaluation): the job is gone at once, and
    the evaluation stops its allocations; they stay listed until their node
    reports them stopped and GC takes them. Was: listed ``dead (stopped)``
    until its allocations had stopped."""
    spec = tmp_path / "doomed.json"
    spec.write_text(json.dumps({**SPEC, "id": "doomed"}))
    _json(suite, "job", "run", "--detach", str(spec))
    every = 'job_id == "doomed"'
    _until(lambda: any(a["client_status"] == "running"
                       for a in _json(suite, "alloc", "list", "--filter", every)),
           30, "doomed running")
    first = _json(suite, "job", "stop", "doomed", "--purge")
    assert not first.get("purge_pending") and first["stopped_allocations"] == 1, first
    assert first["eval_id"] and first["pending_allocations"] == 1
    gone = drover(suite, "job", "status", "doomed")
    assert gone.returncode != 0  # at once
    assert "doomed" not in {j["id"] for j in _json(suite, "job", "list")}
    ev = _json(suite, "eval", "status", first["eval_id"])
    ev = ev.get("evaluation", ev)
    assert ev["triggered_by"] == "job-deregister"
    # Nothing is deleted under the node: the allocation is stopped, then reported.
    _until(lambda: all(a["desired_status"] == "stop" and a["client_status"] == "complete"
                       for a in _json(suite, "alloc", "list", "--filter", every)),
           30, "the node reports it stopped")
    again = drover(suite, "job", "stop", "doomed", "--purge")
    assert again.returncode != 0


def _plan(env: dict[str, str], spec: Path) -> tuple[int, dict[str, Any], str]:
    out = drover(env, "job", "plan", str(spec), "--json")
    text = drover(env, "job", "plan", str(spec))
    assert out.returncode == text.returncode, (out.stderr, text.stderr)
    return out.returncode, json.loads(out.stdout), text.stdout


def test_plan_shows_what_run_then_does(suite: dict[str, str], tmp_path: Path) -> None:
    spec = tmp_path / "planned.json"
    group = {"name": "g", "count": 2, "update": {"min_healthy_time": "1s"},
             "tasks": [{"name": "t", "driver": "sim", "config": {"image": "p:1"},
                        "resources": {"cpu": 100, "memory_mb": 64}}]}
    spec.write_text(json.dumps({"id": "planned", "task_groups": [group]}))
    code, plan, text = _plan(suite, spec)
    assert code == 1 and plan["diff_type"] == "Added"
    assert plan["desired_updates"]["g"]["place"] == 2
    assert 'Task Group: "g" (2 create)' in text and "All tasks successfully allocated" in text
    assert "drover job run --check-index 0" in text
    ran = _json(suite, "job", "run", "--detach", "--check-index", plan["job_modify_index"],
                str(spec))
    live = 'job_id == "planned" && desired_status == "run"'
    _until(lambda: len(_json(suite, "alloc", "list", "--filter", live)) == 2, 30, "2 placed")
    assert drover(suite, "deployment", "status", ran["deployment_id"], "--watch").returncode == 0
    # unchanged: exit 0, nothing to do
    code, plan, _ = _plan(suite, spec)
    assert code == 0 and plan["diff_type"] == "None"
    # a destructive update rolls max_parallel (1) first: the run replaces exactly one
    group["tasks"][0]["config"]["image"] = "p:2"  # type: ignore[index]
    spec.write_text(json.dumps({"id": "planned", "task_groups": [group]}))
    code, plan, text = _plan(suite, spec)
    assert code == 1 and plan["desired_updates"]["g"]["destructive_update"] == 1
    assert plan["desired_updates"]["g"]["ignore"] == 1
    assert '+/- task_groups[g].tasks[t].config.image: "p:1" => "p:2"' in text
    _json(suite, "job", "run", "--detach", "--check-index", plan["job_modify_index"], str(spec))
    _until(lambda: sum(a["job_version"] == "1" for a in _json(
        suite, "alloc", "list", "--filter", live)) >= 1, 30, "the first replacement")
    # a canary update: the plan and the run place exactly one canary
    group["update"] = {"min_healthy_time": "1s", "canary": 1}
    group["tasks"][0]["config"]["image"] = "p:3"  # type: ignore[index]
    spec.write_text(json.dumps({"id": "planned", "task_groups": [group]}))
    code, plan, text = _plan(suite, spec)
    assert code == 1 and plan["desired_updates"]["g"]["canary"] == 1, plan
    assert "1 canary" in text
    _json(suite, "job", "run", "--detach", "--check-index", plan["job_modify_index"], str(spec))
    canaries = _until(lambda: [a for a in _json(suite, "alloc", "list", "--filter", live)
                               if a["job_version"] == "2"], 30, "the canary")
    assert len(canaries) == 1 and canaries[0]["deployment_status"]["canary"] is True
    # a job that does not fit: the plan says why, and the run places nothing
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"id": "toobig", "task_groups": [{
        "name": "g", "tasks": [{"name": "t", "driver": "sim",
                                "resources": {"cpu": 10_000_000, "memory_mb": 64}}]}]}))
    code, plan, text = _plan(suite, huge)
    assert code == 1 and plan["failed_placements"]["g"]["count"] == 1
    assert "Failed to place all allocations" in text and 'Dimension "cpu" exhausted' in text


def test_a_system_job_follows_nodes_joining_leaving_and_draining(
    suite: dict[str, str], tmp_path: Path,
) -> None:
    spec = tmp_path / "agent.json"
    spec.write_text(json.dumps({"id": "agent", "type": "system", "task_groups": [{
        "name": "g", "tasks": [{"name": "t", "driver": "sim",
                                "resources": {"cpu": 50, "memory_mb": 32}}]}]}))
    _json(suite, "job", "run", "--detach", str(spec))
    live = 'job_id == "agent" && desired_status == "run" && client_status != "lost"'

    def on_nodes() -> list[str]:
        return sorted(a["node_id"] for a in _json(suite, "alloc", "list", "--filter", live))

    first = _until(lambda: len(n := on_nodes()) == 2 and n, 30, "one per node")
    assert len(set(first)) == 2
    extra = subprocess.Popen([sys.executable, "-m", "drover.cli.main", "sim", "nodes", "1",
                              "--prefix", "extra"], env=suite, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        joined = _until(lambda: "extra-0" in (n := on_nodes()) and n, 30, "placed on the joiner")
        assert len(joined) == 3
        assert drover(suite, "node", "down", "extra-0").returncode == 0
        _until(lambda: on_nodes() == first, 30, "gone from the node that left")
        # --force: the node also holds the earlier tests' service allocations,
        # which would migrate one by one first (system allocations leave last).
        assert drover(suite, "node", "drain", first[0], "--force").returncode == 0
        _until(lambda: on_nodes() == first[1:], 30, "stopped on the draining node")
    finally:
        extra.send_signal(signal.SIGTERM)
        extra.wait(10)
        drover(suite, "node", "drain", first[0], "--disable")

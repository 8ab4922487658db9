"""The `drover` CLI against a real state service: paging, errors, and the
big-backlog delete flow over 10,000 evaluations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2, scheduler_pb2


def drover(*args: str, address: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "drover.cli.main", *args],
        input=stdin, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "DROVER_ADDR": address, "COLUMNS": "200"},
    )


def _seed(address: str, job: str, n: int) -> None:
    with grpc.insecure_channel(address) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        for start in range(0, n, 100):
            stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
                evaluation_pb2.Evaluation(
                    id=str(uuid.uuid4()), namespace="default", priority=50, type="batch",
                    triggered_by="job-register", job_id=f"{job}-{i % 7}",
                    status=evaluation_pb2.EVALUATION_STATUS_PENDING)
                for i in range(start, min(n, start + 100))
            ]), timeout=30)


def _pause(address: str, paused: bool) -> None:
    with grpc.insecure_channel(address) as ch:
        state_pb2_grpc.StateServiceStub(ch).SetSchedulerConfig(
            state_pb2.SetSchedulerConfigRequest(
                config=scheduler_pb2.SchedulerConfig(pause_eval_broker=paused)), timeout=10)


def test_list_count_and_errors(state_address: str) -> None:
    job = f"cli-{uuid.uuid4().hex[:6]}"
    _seed(state_address, job, 23)
    flt = f'job_id.startsWith("{job}-")'
    listed = drover("eval", "list", "--filter", flt, "--page-size", "5", "--json",
                    address=state_address)
    assert listed.returncode == 0, listed.stderr
    evals = json.loads(listed.stdout)
    assert len(evals) == 23 and len({e["id"] for e in evals}) == 23
    desc = json.loads(drover("eval", "list", "--filter", flt, "--order", "desc", "--json",
                             address=state_address).stdout)
    assert [e["id"] for e in desc] == [e["id"] for e in reversed(evals)]
    count = drover("eval", "count", "--filter", flt, address=state_address)
    assert count.stdout.strip() == "23"

    bad = drover("eval", "list", "--filter", "no_such_field == 1", address=state_address)
    assert bad.returncode == 1
    assert "INVALID_FILTER" in bad.stderr and "no_such_field" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = drover("eval", "status", "no-such-eval", address=state_address)
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr

    unreachable = drover("eval", "count", address="127.0.0.1:1")
    assert unreachable.returncode == 1 and "cannot reach drover" in unreachable.stderr


def test_delete_refused_while_broker_runs(state_address: str) -> None:
    _pause(state_address, False)
    job = f"cli-{uuid.uuid4().hex[:6]}"
    _seed(state_address, job, 3)
    out = drover("eval", "delete", "--filter", f'job_id.startsWith("{job}-")', "--yes",
                 address=state_address)
    assert out.returncode == 1
    assert "not paused" in out.stderr and "drover operator scheduler pause" in out.stderr
    assert drover("eval", "count", "--filter", f'job_id.startsWith("{job}-")',
                  address=state_address).stdout.strip() == "3"


def test_delete_ten_thousand_by_filter_with_progress(state_address: str) -> None:
    job = f"big-{uuid.uuid4().hex[:6]}"
    _seed(state_address, job, 10_000)
    _seed(state_address, f"keep-{job}", 50)
    flt = f'job_id.startsWith("{job}-")'
    assert drover("operator", "scheduler", "pause", address=state_address).returncode == 0

    declined = drover("eval", "delete", "--filter", flt, address=state_address, stdin="n\n")
    assert declined.returncode != 0
    assert "Delete 10000 evaluations? [y/N]" in declined.stderr

    dry = drover("eval", "delete", "--filter", flt, "--dry-run", address=state_address)
    assert dry.returncode == 0 and "would delete 10000 evaluations" in dry.stdout

    done = drover("eval", "delete", "--filter", flt, "--page-size", "500",
                  address=state_address, stdin="y\n")
    assert done.returncode == 0, done.stderr
    assert "deleted 10000 evaluations" in done.stdout
    assert "deleting" in done.stderr and "10000/10000" in done.stderr  # the progress bar
    assert drover("eval", "count", "--filter", flt,
                  address=state_address).stdout.strip() == "0"
    assert drover("eval", "count", "--filter", f'job_id.startsWith("keep-{job}-")',
                  address=state_address).stdout.strip() == "50"
    assert drover("operator", "scheduler", "resume", address=state_address).returncode == 0


def test_delete_by_job_counts_and_deletes_the_same_set(state_address: str) -> None:
    job = f"q-{uuid.uuid4().hex[:6]}"
    _seed(state_address, job, 21)  # jobs <job>-0 .. <job>-6, three evaluations each
    # Quotes of both kinds: the CLI used to splice --job into the filter and
    # rewrite every ' in it, so the count it confirmed was of another set.
    flt = "triggered_by == 'job-register' || status_description == 'it\"s'"
    _pause(state_address, False)
    preview = drover("eval", "delete", "--job", f"{job}-1", "--filter", flt, "--dry-run",
                     address=state_address)
    assert preview.returncode == 0, preview.stderr  # no pause needed for a preview
    assert "would delete 3 evaluations" in preview.stdout
    _pause(state_address, True)
    try:
        declined = drover("eval", "delete", "--job", f"{job}-1", "--filter", flt,
                          address=state_address, stdin="n\n")
        assert "Delete 3 evaluations? [y/N]" in declined.stderr
        done = drover("eval", "delete", "--job", f"{job}-1", "--filter", flt, "--yes",
                      address=state_address)
        assert done.returncode == 0 and "deleted 3 evaluations" in done.stdout, done.stderr
    finally:
        _pause(state_address, False)
    assert drover("eval", "count", "--job", f"{job}-1", "--filter", flt,
                  address=state_address).stdout.strip() == "0"
    assert drover("eval", "count", "--filter", f'job_id.startsWith("{job}-")',
                  address=state_address).stdout.strip() == "18"

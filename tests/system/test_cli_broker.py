"""`drover broker ...` against a real state service and broker."""

from __future__ import annotations

import json
import time
import uuid

import grpc
from test_cli_evals import drover

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2


def _serving(address: str) -> None:
    deadline = time.monotonic() + 30
    with grpc.insecure_channel(address) as ch:
        stub = broker_pb2_grpc.EvalBrokerServiceStub(ch)
        while time.monotonic() < deadline:
            try:
                if stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(),
                                       timeout=5).stats.enabled:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise AssertionError("the broker did not start serving")


def _seed(address: str, *evals: tuple[str, str]) -> None:
    with grpc.insecure_channel(address) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        for eval_id, job in evals:  # one at a time: a2 arrives after a1
            stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
                evaluation_pb2.Evaluation(
                    id=eval_id, namespace="default", priority=50, type="service",
                    triggered_by="job-register", job_id=job,
                    status=evaluation_pb2.EVALUATION_STATUS_PENDING)]), timeout=10)


def _json(*args: str, address: str) -> object:
    done = drover(*args, "--json", address=address)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_stats_queue_and_cancel(state_address: str, broker_address: str) -> None:
    _serving(broker_address)
    run = uuid.uuid4().hex[:6]
    a1, a2, b1 = f"{run}-a1", f"{run}-a2", f"{run}-b1"
    _seed(state_address, (a1, f"{run}-a"), (a2, f"{run}-a"), (b1, f"{run}-b"))

    def held(*extra: str) -> list[dict]:
        return _json("broker", "queue", "--prefix", run, *extra,  # type: ignore[return-value]
                     address=broker_address)

    deadline = time.monotonic() + 10
    while len(held()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    paged = held("--page-size", "1")
    assert [q["evaluation"]["id"] for q in paged] == [a1, a2, b1]
    assert {q["evaluation"]["id"]: q["state"] for q in paged} == {
        a1: "ready", a2: "pending", b1: "ready"}
    assert [q["evaluation"]["id"] for q in held("--order", "desc", "--limit", "2")] == [b1, a2]
    pending = held("--filter", 'state == "pending"')
    assert [q["evaluation"]["id"] for q in pending] == [a2]

    stats = _json("broker", "stats", address=broker_address)
    assert stats["enabled"] is True  # type: ignore[index]
    assert (stats["total_ready"], stats["total_pending"]) == ("2", "1")  # type: ignore[index]
    table = drover("broker", "stats", address=broker_address)
    assert table.returncode == 0 and "leader (term" in table.stdout

    cancelled = drover("broker", "cancel", a2, "--reason", "cli test", address=broker_address)
    assert cancelled.returncode == 0 and f"canceled {a2}" in cancelled.stdout, cancelled.stderr
    status = _json("eval", "status", a2, address=state_address)
    assert status["evaluation"]["status"] == "canceled"  # type: ignore[index]
    assert status["evaluation"]["status_description"] == (  # type: ignore[index]
        "canceled by an operator: cli test")
    assert [q["evaluation"]["id"] for q in held()] == [a1, b1]


def test_bad_input_is_one_clear_line(state_address: str, broker_address: str) -> None:
    _serving(broker_address)
    unknown = drover("broker", "cancel", "no-such-eval", address=broker_address)
    assert unknown.returncode == 1
    assert "UNKNOWN_EVALUATION" in unknown.stderr and "Traceback" not in unknown.stderr
    bad = drover("broker", "queue", "--filter", "state ==", address=broker_address)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "filter" in bad.stderr.lower()

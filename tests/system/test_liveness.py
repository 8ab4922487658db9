"""Node liveness on real processes (issue 31): `drover serve state`, two
`drover serve broker` replicas and `drover sim nodes` processes over the
session etcd, with a short TTL (``--state-min-heartbeat-ttl 2``,
``--state-heartbeat-grace 2``).

- idle heartbeats move no etcd revision, yet keep every node's lease alive;
- a killed node process's nodes go down within TTL + grace of the kill (the
  lease a node holds is ``ceil(TTL + grace)``, its TTL at most twice the
  minimum with the stagger), and not before the grace has passed;
- killing the broker leader marks no live node down, and the new leader
  detects a kill afterwards;
- a frozen node process, marked down, comes back ready on its next heartbeat
  and unblocks a blocked evaluation.

No worker runs: the control plane itself marks nodes down.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import grpc
import pytest
from polling import until
from service_procs import serve, serve_process

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2, job_pb2, node_pb2

_until = functools.partial(until, step=0.05)

pytestmark = pytest.mark.slow

MIN_TTL, GRACE = 2.0, 2.0
#: The longest lease a node can hold: ceil(2 * MIN_TTL + GRACE) (the stagger doubles at most).
MAX_LEASE = 6.0
#: How often the broker leader checks, and the slack of this test's polling.
CHECK, SLACK = 0.2, 1.0
READY = node_pb2.NODE_STATUS_READY
DOWN = node_pb2.NODE_STATUS_DOWN


@contextlib.contextmanager
def _cluster(etcd: str, prefix: str) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """state + two brokers; the broker processes (the first started leads)."""
    with contextlib.ExitStack() as stack:
        state = stack.enter_context(serve(
            "state", etcd, prefix, "--state-min-heartbeat-ttl", str(MIN_TTL),
            "--state-heartbeat-grace", str(GRACE)))
        brokers = []
        for _ in range(2):
            _, proc = stack.enter_context(serve_process(
                "broker", etcd, prefix, "--state-address", state,
                "--broker-heartbeat-check-interval", str(CHECK)))
            brokers.append(proc)
            time.sleep(0.5)  # the first one wins the election
        yield state, brokers


@contextlib.contextmanager
def _sim(state: str, prefix: str, count: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-m", "drover.cli.main", "sim", "nodes", str(count),
                        "--address", state, "--prefix", prefix, "--keep"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(10)


def _nodes(stub: state_pb2_grpc.StateServiceStub) -> dict[str, node_pb2.Node]:
    return {n.id: n for n in stub.ListNodes(state_pb2.ListNodesRequest(), timeout=5).nodes}


def _alive(stub: state_pb2_grpc.StateServiceStub, ids: list[str]) -> bool:
    nodes = _nodes(stub)
    return all(i in nodes and nodes[i].status == READY and nodes[i].heartbeat_lease
               for i in ids)


def _revision(stub: state_pb2_grpc.StateServiceStub) -> int:
    """etcd's revision, through a consistent read (its index is the store's revision)."""
    return int(stub.ListNodes(state_pb2.ListNodesRequest(page_size=1), timeout=5).meta.index)


def _kill_and_time_down(stub: state_pb2_grpc.StateServiceStub, proc: subprocess.Popen[bytes],
                        ids: list[str], others: list[str]) -> float:
    killed = time.monotonic()
    proc.kill()

    def all_down() -> bool:
        nodes = _nodes(stub)
        assert all(nodes[o].status == READY for o in others), "a live node was marked down"
        return all(nodes[i].status == DOWN for i in ids)

    _until(all_down, MAX_LEASE + CHECK + SLACK + 2, "the killed nodes to go down")
    return time.monotonic() - killed


def test_idle_heartbeats_write_nothing_and_a_killed_node_goes_down_within_ttl_and_grace(
        etcd_endpoint: str, etcd_prefix: str) -> None:
    with _cluster(etcd_endpoint, etcd_prefix) as (state, _), \
            grpc.insecure_channel(state) as ch, \
            _sim(state, "a", 3) as a, _sim(state, "b", 20):
        stub = state_pb2_grpc.StateServiceStub(ch)
        a_ids, b_ids = [f"a-{i}" for i in range(3)], [f"b-{i}" for i in range(20)]
        _until(lambda: _alive(stub, a_ids + b_ids), 30, "23 nodes alive")
        before = _nodes(stub)
        rev = _revision(stub)
        time.sleep(MAX_LEASE + 2)  # longer than any lease: only keepalives keep them
        after = _nodes(stub)
        assert _revision(stub) == rev, "idle heartbeats wrote to etcd"
        assert {i: (n.status, n.heartbeat_lease) for i, n in after.items()} == \
            {i: (READY, n.heartbeat_lease) for i, n in before.items()}
        took = _kill_and_time_down(stub, a, a_ids, b_ids)
        assert GRACE <= took <= MAX_LEASE + CHECK + SLACK, took
        down = _nodes(stub)["a-0"]
        assert down.status_description == "Node heartbeat missed"


def test_a_broker_failover_marks_no_live_node_down_and_the_new_leader_detects(
        etcd_endpoint: str, etcd_prefix: str) -> None:
    with _cluster(etcd_endpoint, etcd_prefix) as (state, brokers), \
            grpc.insecure_channel(state) as ch, \
            _sim(state, "a", 3) as a, _sim(state, "b", 10):
        stub = state_pb2_grpc.StateServiceStub(ch)
        a_ids, b_ids = [f"a-{i}" for i in range(3)], [f"b-{i}" for i in range(10)]
        _until(lambda: _alive(stub, a_ids + b_ids), 30, "13 nodes alive")
        brokers[0].kill()  # the leader, without a goodbye: its session must expire
        deadline = time.monotonic() + MAX_LEASE + 4  # the failover and then some
        while time.monotonic() < deadline:
            assert _alive(stub, a_ids + b_ids), "the failover marked a live node down"
            time.sleep(0.1)
        took = _kill_and_time_down(stub, a, a_ids, b_ids)
        assert took <= MAX_LEASE + CHECK + SLACK, took


def test_a_frozen_node_marked_down_comes_back_ready_and_unblocks(
        etcd_endpoint: str, etcd_prefix: str) -> None:
    with _cluster(etcd_endpoint, etcd_prefix) as (state, _), \
            grpc.insecure_channel(state) as ch, _sim(state, "a", 2) as a:
        stub = state_pb2_grpc.StateServiceStub(ch)
        ids = ["a-0", "a-1"]
        _until(lambda: _alive(stub, ids), 30, "2 nodes alive")
        a.send_signal(signal.SIGSTOP)
        _until(lambda: all(_nodes(stub)[i].status == DOWN for i in ids),
               MAX_LEASE + CHECK + SLACK + 2, "the frozen nodes to go down")
        job = job_pb2.Job(id="web", datacenters=["dc1"],
                          task_groups=[job_pb2.TaskGroup(name="g", count=1)])
        stub.RegisterJob(state_pb2.RegisterJobRequest(job=job), timeout=5)
        blocked = evaluation_pb2.Evaluation(
            id="0b0b0b0b-0000-4000-8000-000000000001", namespace="default", type="service",
            job_id="web", triggered_by="queued-allocs",
            status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)
        stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[blocked]),
                               timeout=5)
        a.send_signal(signal.SIGCONT)
        _until(lambda: _alive(stub, ids), MAX_LEASE + 4, "the nodes to come back ready")
        ev = stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=blocked.id), timeout=5)
        assert ev.evaluation.status != evaluation_pb2.EVALUATION_STATUS_BLOCKED

"""`drover system gc` and `drover job stop --purge` against real `drover serve`
processes; the GC thresholds come from their DROVER_GC_* environment twins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from service_procs import serve

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2, node_pb2

pytestmark = pytest.mark.slow


def drover(*args: str, address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "DROVER_ADDR": address})


@pytest.fixture
def deployments_address(etcd_endpoint: str, etcd_prefix: str, state_address: str,
                        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("DROVER_GC_NODE_THRESHOLD", "1h")  # the child inherits it
    with serve("deployments", etcd_endpoint, etcd_prefix,
               "--state-address", state_address) as address:
        yield address


def down_node(stub: state_pb2_grpc.StateServiceStub, node_id: str, ago: float) -> None:
    at = Timestamp()
    at.FromNanoseconds(int((time.time() - ago) * 1e9))
    stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
        id=node_id, status=node_pb2.NODE_STATUS_DOWN, status_updated_at=at)), timeout=10)


def gc_until_leader(address: str, *flags: str) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while True:
        out = drover("system", "gc", "--json", *flags, address=address)
        if out.returncode == 0:
            return json.loads(out.stdout)  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, out.stderr
        time.sleep(0.3)  # no leader elected yet


def test_system_gc_and_purge_from_the_cli(state_address: str,
                                          deployments_address: str) -> None:
    with grpc.insecure_channel(state_address) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        down_node(stub, "down-2h", 2 * 3600)
        down_node(stub, "down-10m", 600)
        job = job_pb2.Job(id="cron", type=job_pb2.JOB_TYPE_BATCH, datacenters=["dc1"],
                          task_groups=[job_pb2.TaskGroup(name="run", count=1)])
        stub.RegisterJob(state_pb2.RegisterJobRequest(job=job), timeout=10)

        kept = gc_until_leader(deployments_address, "--respect-thresholds")
        assert int(str(kept.get("nodes"))) == 1  # 2 h > DROVER_GC_NODE_THRESHOLD=1h > 10 min
        forced = gc_until_leader(deployments_address)
        assert int(str(forced.get("nodes"))) == 1  # the 10-minute one, thresholds ignored
        nodes = stub.ListNodes(state_pb2.ListNodesRequest(), timeout=10)
        assert [n.id for n in nodes.nodes] == []

    purge = drover("job", "stop", "cron", "--purge", address=state_address)
    assert purge.returncode == 0, purge.stderr
    assert purge.stdout.strip() == ("job 'cron' purged: 1 versions, 0 deployments,"
                                    " 1 evaluations, 0 allocations removed in 1 txns")
    again = drover("job", "stop", "cron", "--purge", address=state_address)
    assert again.returncode != 0 and "NOT_FOUND" in again.stderr + again.stdout

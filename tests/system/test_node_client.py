"""A Node.js client (grpc-js + the repo's protos) and the Python client see
the same evaluations through a real state service; the Node.js client also
registers nodes and heartbeats with the secret its registration returned."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2

ROOT = Path(__file__).resolve().parents[2]


def test_node_client_sees_what_python_sees(state_address: str, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is required (Debian nodejs)"
    assert (ROOT / "node_modules" / "@grpc" / "grpc-js").exists(), "run `npm install` first"
    run = uuid.uuid4().hex[:8]
    out = tmp_path / "node.json"
    result = subprocess.run(
        [node, "--test", str(ROOT / "tests" / "node" / "state_client.test.mjs")],
        env={"PATH": "/usr/bin:/bin", "DROVER_STATE_ADDR": state_address,
             "DROVER_NODE_OUT": str(out), "DROVER_NODE_RUN": run},
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# pass 2" in result.stdout, result.stdout
    node_seen = json.loads(out.read_text())

    with grpc.insecure_channel(state_address) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        resp = stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
            namespace="*", filter=f'job_id.startsWith("node-{run}-")', page_size=100),
            timeout=10)
    python_seen = [
        {"id": e.id, "job_id": e.job_id,
         "status": evaluation_pb2.EvaluationStatus.Name(e.status),
         "priority": e.priority, "create_index": str(e.create_index)}
        for e in resp.evaluations
    ]
    assert node_seen == python_seen
    assert len(python_seen) == 5
    with grpc.insecure_channel(state_address) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        for suffix in ("a", "b"):  # registered by the Node.js client, secrets hashed
            got = stub.GetNode(state_pb2.GetNodeRequest(id=f"node-{run}-{suffix}"), timeout=10)
            assert len(got.node.secret_sha256) == 32

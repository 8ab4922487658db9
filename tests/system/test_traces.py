"""One trace per CLI call across real processes: `drover job run` and
`drover broker cancel` through the proxy, exported by every process over
OTLP/gRPC (the standard OTEL_* variables) to a collector this test runs
(a grpc server implementing the OTLP TraceService)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections import defaultdict
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from polling import until
from service_procs import serve

from drover.dev.ports import free_port


class _Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        # trace id (hex) -> [(service.name, span name, kind)]
        self.traces: dict[str, list[tuple[str, str, int]]] = defaultdict(list)

    def Export(self, request: Any, context: Any) -> Any:
        with self.lock:
            for rs in request.resource_spans:
                attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
                service = attrs.get("service.name", "?")
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        self.traces[span.trace_id.hex()].append((service, span.name, span.kind))
        return trace_service_pb2.ExportTraceServiceResponse()

    def trace_of(self, root_name: str) -> dict[str, list[tuple[str, str, int]]]:
        with self.lock:
            return {t: list(spans) for t, spans in self.traces.items()
                    if any(s == "drover-cli" and n == root_name for s, n, _ in spans)}


def _cli(*args: str, proxy: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args, "--address", proxy],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.slow
def test_one_trace_follows_a_cli_call_through_proxy_state_and_broker(
    etcd_endpoint: str, etcd_prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    collector = _Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, server)
    port = free_port()
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    # Every process below (services and CLI) inherits these.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # this collector takes traces only
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    try:
        with serve("state", etcd_endpoint, etcd_prefix) as state, \
                serve("broker", etcd_endpoint, etcd_prefix, "--state-address", state), \
                serve("proxy", etcd_endpoint, etcd_prefix) as proxy:
            spec = tmp_path / "web.yaml"
            spec.write_text("id: traced\nnamespace: default\ntype: JOB_TYPE_BATCH\n"
                            "priority: 50\ndatacenters: [dc1]\n"
                            "taskGroups:\n  - name: g\n    count: 1\n")
            last: list[subprocess.CompletedProcess[str]] = []

            def job_run() -> subprocess.CompletedProcess[str] | None:
                last[:] = [_cli("job", "run", "--detach", str(spec), proxy=proxy)]
                return last[0] if last[0].returncode == 0 else None

            ran = until(job_run, 30, "the proxy to reach state", detail=lambda: last[0].stderr)
            eval_id = re.search(r"Evaluation ID: (\S+)", ran.stdout)
            assert eval_id, ran.stdout
            until(lambda: _cli("broker", "cancel", eval_id.group(1), proxy=proxy).returncode == 0,
                  30, "the broker to lead and queue the evaluation")
            env_free = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            assert env_free  # the services run with OTEL_* set, not this test's process

            def joined(root: str, services: set[str]) -> dict[str, Any]:
                return {t: spans for t, spans in collector.trace_of(root).items()
                        if services <= {s for s, _, _ in spans}}

            run_traces = until(
                lambda: joined("drover job run", {"drover-cli", "drover-proxy", "drover-state"}),
                30, "one trace of `job run` across cli, proxy and state",
                detail=lambda: dict(collector.traces))
            spans = next(iter(run_traces.values()))
            names = {(s, n) for s, n, _ in spans}
            assert ("drover-state", "/drover.state.v1.StateService/RegisterJob") in names
            assert ("drover-state", "etcd Txn") in names
            assert ("drover-proxy", "/drover.state.v1.StateService/RegisterJob") in names
            cancel = until(
                lambda: joined("drover broker cancel",
                               {"drover-cli", "drover-proxy", "drover-broker", "drover-state"}),
                30, "one trace of `broker cancel` across cli, proxy, broker and state",
                detail=lambda: collector.trace_of("drover broker cancel"))
            spans = next(iter(cancel.values()))
            broker_calls = {n for s, n, k in spans if s == "drover-broker"}
            assert any(n.startswith("drover.state.v1.StateService/") for n in broker_calls), \
                broker_calls
    finally:
        server.stop(0)

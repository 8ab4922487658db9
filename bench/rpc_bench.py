"""The fixed CPU cost of one unary RPC through drover's server and channel.

A server process (``DroverServer``: the observe and error interceptors,
health, reflection, exactly as a service runs it) answers ``GetJob`` with an
empty response; this process calls it through ``drover.rpc.channels.channel``
(its traced channel) from ``--concurrency`` tasks. Each row is the
CPU per call of the server process and of the client process (user + system,
all threads: grpc's pollers included), measured over ``--calls`` calls after
a warm-up, the median of ``--rounds`` rounds.

Modes:

- ``bare``: a plain ``grpc.aio`` server and channel, no interceptors: the
  floor no drover code can go under;
- ``drover``: the drover stack with no span exporter (how the services run
  unless ``OTEL_*`` asks for one);
- ``drover+export``: the same with a span processor on both sides (a
  batch processor whose exporter drops spans), i.e. the cost when an
  exporter is configured;
- ``stack``: no sockets: the Python work of the server stack alone (the
  observe and error interceptors resolving the handler, then the wrapped
  handler, a drover hop's ``traceparent`` in the metadata), in process,
  CPU per call as ``server_us``. Far less noisy on a shared machine.

Usage: ``.venv/bin/python bench/rpc_bench.py [--calls 20000] [--rounds 3]
[--modes bare,drover,drover+export] [--ab /work/main/.venv/bin/python]
[--json]``. ``--ab`` runs every round with another tree's interpreter too
(its editable install is that tree's drover), alternating, so both sides
share the same minutes of a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc

MODES = ("bare", "drover", "drover+export", "stack")
STATE = "drover.state.v1.StateService"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Servicer(state_pb2_grpc.StateServiceServicer):
    async def GetJob(self, request: Any, context: Any) -> Any:
        return state_pb2.GetJobResponse()


def _app() -> Any:
    from drover.rpc.app import StaticApp
    from drover.rpc.server import ServiceBinding

    return StaticApp([ServiceBinding(STATE, _Servicer(),
                                     state_pb2_grpc.add_StateServiceServicer_to_server)])


def _telemetry(mode: str) -> None:
    """What ``drover serve`` sets up, plus a dropping exporter for +export."""
    if mode == "bare":
        return
    if mode == "stack":
        mode = "drover"
    from drover.telemetry import setup

    setup(service="bench", log_level="WARNING")
    if mode == "drover+export":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
        from opentelemetry.sdk.trace.export import SpanExportResult as Result

        class _Drop(SpanExporter):
            def export(self, spans: Sequence[Any]) -> Result:
                return Result.SUCCESS

        provider = trace.get_tracer_provider()
        assert isinstance(provider, TracerProvider), type(provider)
        provider.add_span_processor(BatchSpanProcessor(_Drop()))


async def _serve(mode: str) -> None:
    _telemetry(mode)
    if mode == "bare":
        server = grpc.aio.server()
        state_pb2_grpc.add_StateServiceServicer_to_server(_Servicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        stop = server.stop
    else:
        from drover.config import ServeSettings
        from drover.rpc.server import DroverServer

        drover = DroverServer(ServeSettings(service="state", listen="127.0.0.1:0"), _app())
        await drover.start()
        port = drover.port
        stop = drover.stop
    print(port, flush=True)
    # Until the parent closes our stdin.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await stop(0)


async def _calls(stub: Any, n: int, concurrency: int) -> None:
    request = state_pb2.GetJobRequest(id="web", namespace="default")
    per = n // concurrency

    async def worker() -> None:
        for _ in range(per):
            await stub.GetJob(request, timeout=10)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def _drive(mode: str, address: str, pid: int, calls: int,
                 concurrency: int) -> dict[str, float]:
    if mode == "bare":
        ch = grpc.aio.insecure_channel(address)
    else:
        from drover.rpc.channels import channel

        ch = channel(address)
    async with ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        await _calls(stub, max(1000, calls // 5), concurrency)  # warm up
        server0, client0, t0 = cpu_seconds(pid), time.process_time(), time.perf_counter()
        await _calls(stub, calls, concurrency)
        wall = time.perf_counter() - t0
        server = cpu_seconds(pid) - server0
        client = time.process_time() - client0
    done = calls // concurrency * concurrency
    return {"server_us": server / done * 1e6, "client_us": client / done * 1e6,
            "calls_per_s": done / wall}


def _stack(calls: int) -> dict[str, float]:
    from types import SimpleNamespace

    from drover.rpc.errors import ErrorInterceptor
    from drover.rpc.interceptors import ObserveInterceptor

    metadata = (("user-agent", "grpc-python-asyncio"),
                ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))

    class Context:
        def peer(self) -> str:
            return "ipv4:127.0.0.1:50000"

        def invocation_metadata(self) -> Any:
            return metadata

        def time_remaining(self) -> float:
            return 9.5

        def code(self) -> None:
            return None

    base = grpc.unary_unary_rpc_method_handler(
        _Servicer().GetJob, request_deserializer=state_pb2.GetJobRequest.FromString)
    chain: list[Any] = [ObserveInterceptor("state"), ErrorInterceptor()]
    details = SimpleNamespace(method=f"/{STATE}/GetJob", invocation_metadata=metadata)

    async def resolve(d: Any, i: int = 0) -> Any:
        if i == len(chain):
            return base
        return await chain[i].intercept_service(lambda d: resolve(d, i + 1), d)

    async def run(n: int) -> float:
        request, context = state_pb2.GetJobRequest(id="web", namespace="default"), Context()
        t0 = time.process_time()
        for _ in range(n):
            handler = await resolve(details)
            await handler.unary_unary(request, context)
        return time.process_time() - t0

    asyncio.run(run(max(1000, calls // 5)))
    cpu = asyncio.run(run(calls))
    return {"server_us": cpu / calls * 1e6, "client_us": 0.0, "calls_per_s": calls / cpu}


def _measure(mode: str, calls: int, concurrency: int) -> dict[str, float]:
    if mode == "stack":
        return _stack(calls)
    proc = subprocess.Popen([sys.executable, __file__, "--serve", mode],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        return asyncio.run(_drive(mode, f"127.0.0.1:{port}", proc.pid, calls, concurrency))
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--ab", metavar="PYTHON", default="",
                    help="another tree's interpreter (e.g. /work/main/.venv/bin/python): "
                         "every round runs it too, alternating, for an A/B in the same minutes")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.serve:
        asyncio.run(_serve(args.serve))
        return
    if args.one:
        # One round of one mode, in a fresh process (telemetry is per process).
        _telemetry(args.one)
        print(json.dumps(_measure(args.one, args.calls, args.concurrency)))
        return
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"unknown mode {bad[0]!r}; choose from {', '.join(MODES)}")
    pythons = {"this": sys.executable, **({"ab": args.ab} if args.ab else {})}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {
        label: {m: [] for m in modes} for label in pythons}
    for _ in range(args.rounds):
        for mode in modes:
            for label, python in pythons.items():
                out = subprocess.run(
                    [python, __file__, "--one", mode, "--calls", str(args.calls),
                     "--concurrency", str(args.concurrency)],
                    capture_output=True, text=True, check=True, timeout=900)
                runs[label][mode].append(json.loads(out.stdout))
    results = {label: {m: {k: round(statistics.median(r[k] for r in rows), 2) for k in rows[0]}
                       for m, rows in by_mode.items()} for label, by_mode in runs.items()}
    _report(results, args)


def _report(results: dict[str, Any], args: argparse.Namespace) -> None:
    import drover.rpc

    out = {"calls": args.calls, "rounds": args.rounds, "concurrency": args.concurrency,
           "drover": os.path.dirname(os.path.dirname(drover.rpc.__file__)),
           "modes": results["this"]}
    if "ab" in results:
        out["ab_python"] = args.ab
        out["ab_modes"] = results["ab"]
    if args.json:
        print(json.dumps(out))
        return
    print(f"{args.calls} GetJob calls x {args.rounds} rounds (median), "
          f"{args.concurrency} in flight")
    print(f"{'tree':<6}{'mode':<15}{'server us/call':>16}{'client us/call':>16}{'calls/s':>10}")
    for label, by_mode in results.items():
        tree = "this" if label == "this" else "ab"
        for mode, r in by_mode.items():
            print(f"{tree:<6}{mode:<15}{r['server_us']:>16.1f}{r['client_us']:>16.1f}"
                  f"{r['calls_per_s']:>10.0f}")
    print(f"this = {out['drover']}" + (f"; ab = {args.ab}" if args.ab else ""))


if __name__ == "__main__":
    main()

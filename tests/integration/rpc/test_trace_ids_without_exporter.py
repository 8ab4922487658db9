"""With no span exporter (how services run unless OTEL_* asks for one), trace
context still crosses every hop and every log line carries its ids: a caller's
``traceparent`` -> front server -> drover channel -> backend server, through
real grpc.aio servers, on the provider ``drover.telemetry.setup`` installs."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from opentelemetry import trace

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.app import StaticApp
from drover.rpc.channels import channel
from drover.rpc.server import DroverServer, ServiceBinding
from drover.telemetry import TraceIds
from drover.telemetry._lean import LeanTracerProvider

STATE = "drover.state.v1.StateService"
TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


class _Backend(state_pb2_grpc.StateServiceServicer):
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.log = logging.getLogger("drover.test.lean.backend")

    async def GetJob(self, request: Any, context: Any) -> Any:
        metadata = dict(context.invocation_metadata())
        span = trace.get_current_span()
        self.seen.append({"traceparent": metadata.get("traceparent", ""),
                          "context": span.get_span_context(),
                          "recording": span.is_recording()})
        self.log.warning("backend answers %s", request.id)
        return state_pb2.GetJobResponse()


class _Front(state_pb2_grpc.StateServiceServicer):
    def __init__(self) -> None:
        self.backend = ""
        self.log = logging.getLogger("drover.test.lean.front")

    async def GetJob(self, request: Any, context: Any) -> Any:
        self.log.warning("front forwards %s", request.id)
        async with channel(self.backend) as ch:
            return await state_pb2_grpc.StateServiceStub(ch).GetJob(request, timeout=5)



def _App(servicer: Any) -> StaticApp:
    return StaticApp([ServiceBinding(STATE, servicer,
                                     state_pb2_grpc.add_StateServiceServicer_to_server)])


@pytest.fixture
def lean(monkeypatch: pytest.MonkeyPatch) -> Iterator[LeanTracerProvider]:
    """The provider setup() installs when no exporter is configured, as this
    test's global one (the session's may have test processors on it)."""
    provider = LeanTracerProvider()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    assert trace.get_tracer_provider() is provider and not provider.listening
    yield provider


@pytest.fixture
async def pair(lean: LeanTracerProvider) -> AsyncIterator[tuple[str, _Backend]]:
    backend_servicer, front_servicer = _Backend(), _Front()
    backend = DroverServer(ServeSettings(service="state", listen="127.0.0.1:0"),
                           _App(backend_servicer))
    front = DroverServer(ServeSettings(service="proxy", listen="127.0.0.1:0"),
                         _App(front_servicer))
    await backend.start()
    await front.start()
    front_servicer.backend = f"127.0.0.1:{backend.port}"
    try:
        yield f"127.0.0.1:{front.port}", backend_servicer
    finally:
        await front.stop(0)
        await backend.stop(0)


async def _call(front: str, metadata: tuple[tuple[str, str], ...] = ()) -> None:
    # A plain channel: the caller's traceparent is exactly what we send.
    async with grpc.aio.insecure_channel(front) as ch:
        await state_pb2_grpc.StateServiceStub(ch).GetJob(
            state_pb2.GetJobRequest(id="web"), metadata=metadata, timeout=5)


@pytest.mark.parametrize("flags", ["01", "00"])
async def test_the_callers_trace_reaches_the_backend_and_its_logs(
    pair: tuple[str, _Backend], caplog: pytest.LogCaptureFixture, flags: str,
) -> None:
    front, backend = pair
    caplog.set_level(logging.WARNING, logger="drover.test.lean")
    caplog.handler.addFilter(TraceIds())
    await _call(front, (("traceparent", f"00-{TRACE}-{CALLER_SPAN}-{flags}"),))
    (seen,) = backend.seen
    hop = TRACEPARENT.match(seen["traceparent"])
    assert hop, seen["traceparent"]
    trace_id, parent_span, hop_flags = hop.groups()
    # Same trace, a new parent (the front's client span), sampling kept.
    assert (trace_id, hop_flags) == (TRACE, flags)
    assert parent_span not in (CALLER_SPAN, "0" * 16)
    ctx = seen["context"]
    assert format(ctx.trace_id, "032x") == TRACE
    assert ctx.trace_flags.sampled == (flags == "01")
    assert format(ctx.span_id, "016x") != parent_span  # the backend's own server span
    assert not seen["recording"]  # nothing listens: ids only
    records = {r.name: r for r in caplog.records if r.name.startswith("drover.test.lean")}
    # the ids the TraceIds filter set on each record (not LogRecord attributes to the types)
    front_log = vars(records["drover.test.lean.front"])
    backend_log = vars(records["drover.test.lean.backend"])
    assert front_log["trace_id"] == backend_log["trace_id"] == TRACE
    assert backend_log["span_id"] == format(ctx.span_id, "016x")
    assert front_log["span_id"] not in (CALLER_SPAN, backend_log["span_id"])


async def test_a_call_without_trace_context_starts_one_that_propagates(
    pair: tuple[str, _Backend], caplog: pytest.LogCaptureFixture,
) -> None:
    front, backend = pair
    caplog.set_level(logging.WARNING, logger="drover.test.lean")
    caplog.handler.addFilter(TraceIds())
    await _call(front)
    await _call(front)
    first, second = backend.seen
    ids = []
    for seen in (first, second):
        hop = TRACEPARENT.match(seen["traceparent"])
        assert hop, seen["traceparent"]
        assert hop.group(1) != "0" * 32 and int(hop.group(3), 16) & 1  # a sampled root
        assert format(seen["context"].trace_id, "032x") == hop.group(1)
        ids.append(hop.group(1))
    assert ids[0] != ids[1]  # one trace per call
    logged = [vars(r)["trace_id"] for r in caplog.records if r.name == "drover.test.lean.front"]
    assert logged == ids

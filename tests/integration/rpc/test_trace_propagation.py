"""W3C trace context through real grpc.aio servers and drover channels, and
no "Failed to detach context" when a client cancels a stream."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from drover import errors
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.config import ServeSettings
from drover.rpc.app import StaticApp
from drover.rpc.channels import channel
from drover.rpc.server import DroverServer, ServiceBinding
from drover.telemetry import TraceIds

STATE = "drover.state.v1.StateService"


class _Backend(state_pb2_grpc.StateServiceServicer):
    def __init__(self) -> None:
        self.log = logging.getLogger("drover.test.backend")

    async def GetJob(self, request: Any, context: Any) -> Any:
        self.log.warning("backend answers %s", request.id)
        if request.id != "web":
            raise errors.NotFound(f"job {request.id!r} not found")
        return state_pb2.GetJobResponse()

    async def Subscribe(self, request: Any, context: Any) -> AsyncIterator[Any]:
        index = 0
        while True:
            index += 1
            # No await between messages: the generator waits at its yield
            # while grpc sends, which is where a cancellation finds it.
            yield state_pb2.SubscribeResponse(index=index)


class _Front(state_pb2_grpc.StateServiceServicer):
    """Calls the backend through a drover channel, as proxy and broker do."""

    def __init__(self) -> None:
        self.backend = ""

    async def GetJob(self, request: Any, context: Any) -> Any:
        async with channel(self.backend) as ch:
            return await state_pb2_grpc.StateServiceStub(ch).GetJob(request, timeout=5)



def _App(servicer: Any) -> StaticApp:
    return StaticApp([ServiceBinding(STATE, servicer,
                                     state_pb2_grpc.add_StateServiceServicer_to_server)])


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    try:
        yield exporter
    finally:
        # A processor cannot be removed from a provider: silence this one.
        exporter.shutdown()


@pytest.fixture
async def pair() -> AsyncIterator[tuple[str, str]]:
    front_servicer = _Front()
    backend = DroverServer(ServeSettings(service="state", listen="127.0.0.1:0"),
                           _App(_Backend()))
    front = DroverServer(ServeSettings(service="proxy", listen="127.0.0.1:0"),
                         _App(front_servicer))
    await backend.start()
    await front.start()
    front_servicer.backend = f"127.0.0.1:{backend.port}"
    try:
        yield f"127.0.0.1:{front.port}", f"127.0.0.1:{backend.port}"
    finally:
        await front.stop(0)
        await backend.stop(0)


async def test_one_trace_from_the_caller_through_two_servers(
    spans: InMemorySpanExporter, pair: tuple[str, str], caplog: pytest.LogCaptureFixture,
) -> None:
    front, _ = pair
    tracer = trace.get_tracer("drover.test")
    caplog.set_level(logging.WARNING, logger="drover.test.backend")
    caplog.handler.addFilter(TraceIds())
    with tracer.start_as_current_span("cli command") as root:
        async with channel(front) as ch:
            await state_pb2_grpc.StateServiceStub(ch).GetJob(
                state_pb2.GetJobRequest(id="web"), timeout=5)
    for _ in range(100):
        exporter_spans = spans.get_finished_spans()
        if sum(1 for s in exporter_spans if s.name.lstrip("/").endswith("GetJob")) >= 4:
            break
        await asyncio.sleep(0.02)
    method = f"{STATE}/GetJob"
    trace_id = root.get_span_context().trace_id
    mine = [s for s in exporter_spans if s.context.trace_id == trace_id]
    kinds = sorted(str(s.kind) for s in mine if s.name.lstrip("/") == method)
    # caller CLIENT -> front SERVER -> front CLIENT -> backend SERVER, one trace.
    assert kinds == sorted([str(SpanKind.CLIENT), str(SpanKind.SERVER)] * 2), kinds
    first = [s for s in mine if s.parent is not None
             and s.parent.span_id == root.get_span_context().span_id]
    assert [s.kind for s in first] == [SpanKind.CLIENT]
    # Each SERVER span is the child of the CLIENT span that called it.
    client_ids = {s.context.span_id for s in mine if s.kind == SpanKind.CLIENT}
    for s in (s for s in mine if s.kind == SpanKind.SERVER):
        assert s.parent is not None and s.parent.span_id in client_ids
    # The backend's log line carries the trace it was called in.
    record = next(r for r in caplog.records if r.name == "drover.test.backend")
    assert vars(record)["trace_id"] == format(trace_id, "032x")  # set by the TraceIds filter


async def test_a_cancelled_stream_detaches_its_context_cleanly(
    spans: InMemorySpanExporter, pair: tuple[str, str], caplog: pytest.LogCaptureFixture,
) -> None:
    _, backend = pair
    caplog.set_level(logging.ERROR)
    for _ in range(3):
        async with channel(backend) as ch:
            call = state_pb2_grpc.StateServiceStub(ch).Subscribe(state_pb2.SubscribeRequest())
            seen = 0
            async for _resp in call:
                seen += 1
                if seen == 3:
                    call.cancel()
                    break
    await asyncio.sleep(0.3)
    detach = [r for r in caplog.records if "detach" in r.getMessage().lower()]
    assert not detach, [r.getMessage() for r in detach]
    server_spans = [s for s in spans.get_finished_spans()
                    if s.kind == SpanKind.SERVER and s.name.endswith("Subscribe")]
    assert len(server_spans) == 3

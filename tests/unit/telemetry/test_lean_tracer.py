"""LeanTracerProvider: ids and sampling as the SDK decides them, recording
only once a span processor listens."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import sampling
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from drover.telemetry._lean import LeanTracerProvider

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331


def _remote(flags: int, state: TraceState | None = None) -> trace.Span:
    return NonRecordingSpan(SpanContext(TRACE_ID, SPAN_ID, is_remote=True,
                                        trace_flags=TraceFlags(flags), trace_state=state))


def test_without_a_processor_spans_carry_ids_but_record_nothing() -> None:
    tracer = LeanTracerProvider().get_tracer("t")
    span = tracer.start_span("root")
    ctx = span.get_span_context()
    assert not span.is_recording()
    assert ctx.is_valid and ctx.trace_flags.sampled  # a root is sampled (parent-based always-on)
    child = tracer.start_span("child", context=trace.set_span_in_context(span))
    assert child.get_span_context().trace_id == ctx.trace_id
    assert child.get_span_context().span_id not in (0, ctx.span_id)


def test_a_remote_parent_decides_sampling_and_keeps_its_state() -> None:
    tracer = LeanTracerProvider().get_tracer("t")
    state = TraceState([("vendor", "v1")])
    for flags in (TraceFlags.SAMPLED, TraceFlags.DEFAULT):
        span = tracer.start_span("server", context=trace.set_span_in_context(
            _remote(flags, state)), kind=trace.SpanKind.SERVER)
        ctx = span.get_span_context()
        assert (ctx.trace_id, ctx.trace_flags.sampled) == (TRACE_ID, bool(flags))
        assert ctx.span_id != SPAN_ID and not ctx.is_remote
        assert ctx.trace_state == state


def test_the_same_ids_and_flags_as_the_sdk_would_give() -> None:
    lean = LeanTracerProvider()
    exporter = InMemorySpanExporter()
    full = LeanTracerProvider()
    full.add_span_processor(SimpleSpanProcessor(exporter))
    for flags in (TraceFlags.SAMPLED, TraceFlags.DEFAULT, TraceFlags.SAMPLED | 0x02):
        parent = trace.set_span_in_context(_remote(flags))
        a = lean.get_tracer("t").start_span("s", context=parent).get_span_context()
        b = full.get_tracer("t").start_span("s", context=parent).get_span_context()
        assert (a.trace_id, a.trace_flags, a.trace_state) == (b.trace_id, b.trace_flags,
                                                               b.trace_state)
    root_a = lean.get_tracer("t").start_span("r").get_span_context()
    root_b = full.get_tracer("t").start_span("r").get_span_context()
    assert root_a.trace_flags == root_b.trace_flags


def test_a_configured_sampler_is_asked() -> None:
    tracer = LeanTracerProvider(sampler=sampling.ParentBased(sampling.ALWAYS_OFF)).get_tracer("t")
    root = tracer.start_span("root").get_span_context()
    assert root.is_valid and not root.trace_flags.sampled
    child = tracer.start_span("c", context=trace.set_span_in_context(_remote(TraceFlags.SAMPLED)))
    assert child.get_span_context().trace_flags.sampled


def test_a_processor_added_later_records_spans_of_existing_tracers() -> None:
    provider = LeanTracerProvider()
    tracer = provider.get_tracer("t")  # handed out before anyone listens
    assert provider.get_tracer("t") is tracer
    with tracer.start_as_current_span("before"):
        pass
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    parent = trace.set_span_in_context(_remote(TraceFlags.SAMPLED))
    with tracer.start_as_current_span("after", context=parent,
                                      attributes={"rpc.method": "Get"}) as span:
        assert span.is_recording()
    (done,) = exporter.get_finished_spans()
    assert done.name == "after" and done.attributes == {"rpc.method": "Get"}
    assert done.context.trace_id == TRACE_ID
    assert done.parent is not None and done.parent.span_id == SPAN_ID

"""The fast paths of drover.rpc.propagation read and write exactly what the
W3C propagators would."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import baggage, propagate, trace
from opentelemetry import context as otel_context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from drover.rpc.propagation import _Call, incoming_context

TID = "0af7651916cd43dd8448eb211c80319c"
SID = "b7ad6b7169203331"

HEADERS = [
    {"traceparent": f"00-{TID}-{SID}-01"},
    {"traceparent": f"00-{TID}-{SID}-00"},
    {"traceparent": f"00-{TID}-{SID}-03"},
    {"traceparent": f"00-{'0' * 32}-{SID}-01"},  # invalid trace id
    {"traceparent": f"00-{TID}-{'0' * 16}-01"},  # invalid span id
    {"traceparent": f"00-{TID.upper()}-{SID}-01"},  # not lowercase
    {"traceparent": f"00-{TID}-{SID}-01-extra"},  # version 00 has nothing after
    {"traceparent": f"ff-{TID}-{SID}-01"},
    {"traceparent": f"01-{TID}-{SID}-01-future"},
    {"traceparent": f"  00-{TID}-{SID}-01 "},
    {"traceparent": "garbage"},
    {"traceparent": f"00-{TID}-{SID}-01", "tracestate": "vendor=v1"},
    {"traceparent": f"00-{TID}-{SID}-01", "baggage": "user=alice"},
    {"baggage": "user=alice"},
    {},
]


def _seen(ctx: otel_context.Context) -> tuple[Any, ...]:
    span = trace.get_current_span(ctx).get_span_context()
    return (span.trace_id, span.span_id, span.trace_flags, span.is_remote,
            span.trace_state.to_header(), dict(baggage.get_all(ctx)))


@pytest.mark.parametrize("headers", HEADERS, ids=[str(h) for h in HEADERS])
def test_incoming_context_is_what_the_propagators_extract(headers: dict[str, str]) -> None:
    metadata = [("user-agent", "grpc-python"), *headers.items(), ("x-other", "1")]
    assert _seen(incoming_context(metadata)) == _seen(propagate.extract(dict(metadata)))


class _Echo:
    def __call__(self, request: Any, **kw: Any) -> Any:
        return kw["metadata"]


@pytest.mark.parametrize("state", [None, TraceState([("vendor", "v1")])])
@pytest.mark.parametrize("flags", [0, 1, 3])
@pytest.mark.parametrize("with_baggage", [False, True])
def test_outgoing_metadata_is_what_the_propagators_inject(
    state: TraceState | None, flags: int, with_baggage: bool,
) -> None:
    span = NonRecordingSpan(SpanContext(int(TID, 16), int(SID, 16), is_remote=False,
                                        trace_flags=TraceFlags(flags), trace_state=state))
    call = _Call(_Echo(), "/drover.state.v1.StateService/GetJob",
                 trace.get_tracer("t"), lambda: "s3cret")
    ctx = baggage.set_baggage("user", "alice") if with_baggage else otel_context.get_current()
    token = otel_context.attach(ctx)
    try:
        forwarded = [("traceparent", f"00-{'1' * 32}-{'2' * 16}-01"), ("x-keep", "1"),
                     ("authorization", "Bearer caller")]
        got = call._metadata(forwarded, span)
        expected: dict[str, str] = {}
        propagate.inject(expected, context=trace.set_span_in_context(span))
    finally:
        otel_context.detach(token)
    assert [(k, v) for k, v in got if k in ("traceparent", "tracestate", "baggage")] == sorted(
        expected.items(), key=lambda kv: ["traceparent", "tracestate", "baggage"].index(kv[0]))
    assert ("x-keep", "1") in got
    assert [v for k, v in got if k == "authorization"] == ["Bearer s3cret"]

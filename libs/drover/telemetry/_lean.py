"""A tracer provider whose spans cost only their ids while nobody listens.

Every drover process installs an SDK :class:`TracerProvider` even when no
exporter is configured: a server's span ids go into its log lines and its
trace context travels on to the services it calls (W3C ``traceparent``), so
one trace id ties the logs of every hop together. Without a span processor
an SDK span is built for nothing: its attributes are bounded and copied, its
links and sampler result allocated, its processors called on start and end,
about 20 us of CPU per span and two spans per RPC.

:class:`LeanTracerProvider` is that provider with one difference: while it
has no span processor, its tracers return a
:class:`~opentelemetry.trace.NonRecordingSpan` carrying a fresh span id
under the parent's trace id, with the trace flags and trace state the
configured sampler decides (the default, parent-based always-on, is
computed inline: a sampled parent gives a sampled child, an unsampled one
an unsampled child, a root is sampled). Ids, sampling and propagation are
the SDK's; only recording is skipped, because nothing would read it. The
moment a span processor is added (``OTEL_*`` exporters at setup, a test's
in-memory exporter later) every tracer of the provider, including those
handed out before, builds full SDK spans again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import sampling
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags


class LeanTracerProvider(sdk_trace.TracerProvider):
    """An SDK tracer provider that records spans only once it has a processor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: True once a span processor is added; read by every tracer per span.
        self.listening = False
        super().__init__(*args, **kwargs)

    def add_span_processor(self, span_processor: sdk_trace.SpanProcessor) -> None:
        super().add_span_processor(span_processor)
        self.listening = True

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace_api.Tracer:
        tracer = super().get_tracer(*args, **kwargs)
        if isinstance(tracer, sdk_trace.Tracer) and not isinstance(tracer, _LeanTracer):
            # The SDK caches tracers per scope: swap in the lean one once.
            lean = _LeanTracer.from_sdk(tracer, self)
            with self._tracers_lock:
                for scope, cached in self._tracers.items():
                    if cached is tracer:
                        self._tracers[scope] = lean
            return lean
        return tracer


class _LeanTracer(sdk_trace.Tracer):
    _provider: LeanTracerProvider
    _default_sampler: bool
    _random_ids: bool

    @classmethod
    def from_sdk(cls, tracer: sdk_trace.Tracer, provider: LeanTracerProvider) -> _LeanTracer:
        lean = cls.__new__(cls)
        lean.__dict__.update(tracer.__dict__)
        lean._provider = provider
        lean._default_sampler = tracer.sampler is sampling.DEFAULT_ON
        lean._random_ids = tracer.id_generator.is_trace_id_random()
        return lean

    def start_span(  # type: ignore[override]
        self,
        name: str,
        context: context_api.Context | None = None,
        kind: trace_api.SpanKind = trace_api.SpanKind.INTERNAL,
        attributes: Any = None,
        links: Sequence[trace_api.Link] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace_api.Span:
        if self._provider.listening or not self._is_enabled():
            return super().start_span(name, context, kind, attributes, links, start_time,
                                      record_exception, set_status_on_exception)
        parent = trace_api.get_current_span(context).get_span_context()
        if parent.is_valid:
            trace_id = parent.trace_id
            random_ids = parent.trace_flags.random_trace_id
        else:
            trace_id = self.id_generator.generate_trace_id()
            random_ids = self._random_ids
        if self._default_sampler:
            # ParentBased(ALWAYS_ON): follow a valid parent, sample a root;
            # the parent's trace state is kept either way.
            sampled = parent.trace_flags.sampled if parent.is_valid else True
            state = parent.trace_state if parent.is_valid else None
        else:
            result = self.sampler.should_sample(context, trace_id, name, kind, attributes,
                                                links or ())
            sampled = result.decision.is_sampled()
            state = result.trace_state
        flags = TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT
        if random_ids:
            flags |= TraceFlags.RANDOM_TRACE_ID
        return NonRecordingSpan(SpanContext(
            trace_id, self.id_generator.generate_span_id(), is_remote=False,
            trace_flags=TraceFlags(flags), trace_state=state))

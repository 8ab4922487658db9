"""A write queued in the :class:`~drover.broker.writer.FencedWriter`, and
where its outcome goes.

:class:`PendingWrite` is one queued write: its group, its fence (None: the
term's), the trace context it was made in, and its sink: None for an effect
(nobody awaits it; retried until written), a future (an Ack), or a slot of
an :class:`Outcomes` (an AckBatch: one future for all of its writes).

Invariant: each write's outcome is answered at most once (a later
``resolve`` is ignored: ``close()`` after a landing, say), and a batch's
future resolves only once every one of its writes has its store index or
error; each write still succeeds or fails on its own.

:func:`trace_links` links a batch's ``broker write`` span to the contexts
of its writes after the first (the span's parent).

I/O shell side: futures of the running event loop, OpenTelemetry contexts.
"""

from __future__ import annotations

import asyncio

from opentelemetry import context as otel_context
from opentelemetry import trace

from drover.broker.core.effects import WriteGroup
from drover.coord.fence import Fence
from drover.errors import DroverError

__all__ = ["Outcomes", "PendingWrite", "trace_links"]


class Outcomes:
    """The outcomes of writes queued together (an AckBatch): one future for
    all of them, resolved once every write has its store index or error
    (each write still succeeds or fails on its own)."""

    __slots__ = ("future", "left", "results")

    def __init__(self, future: asyncio.Future[list[int | DroverError]], n: int) -> None:
        self.future = future
        self.results: list[int | DroverError | None] = [None] * n
        self.left = n

    def resolve(self, slot: int, outcome: int | DroverError) -> None:
        if self.results[slot] is not None:
            return  # answered once (close() after a landing, say)
        self.results[slot] = outcome
        self.left -= 1
        if not self.left and not self.future.done():
            self.future.set_result(self.results)  # type: ignore[arg-type]


class PendingWrite:
    """One queued write. ``sink`` is None for an effect (nobody awaits it;
    retried until written), else where its outcome goes: a future, or slot
    ``slot`` of an :class:`Outcomes`."""

    __slots__ = ("attempts", "context", "fence", "group", "sink", "slot")

    def __init__(self, group: WriteGroup, sink: asyncio.Future[int] | Outcomes | None = None,
                 fence: Fence | None = None, context: otel_context.Context | None = None,
                 slot: int = 0) -> None:
        self.group = group
        self.sink = sink
        self.slot = slot
        self.attempts = 0
        # None: the term's fence.
        self.fence = fence
        # The trace context the write was made in (an RPC's server span).
        self.context = otel_context.get_current() if context is None else context

    @property
    def awaited(self) -> bool:
        return self.sink is not None

    def resolve(self, outcome: int | DroverError) -> None:
        sink = self.sink
        if sink is None:
            return
        if isinstance(sink, Outcomes):
            sink.resolve(self.slot, outcome)
        elif not sink.done():
            if isinstance(outcome, DroverError):
                sink.set_exception(outcome)
            else:
                sink.set_result(outcome)


def trace_links(batch: list[PendingWrite]) -> list[trace.Link]:
    """Links to the trace contexts of a batch's writes after the first (the
    span's parent), each context once: an AckBatch's writes share one."""
    links: list[trace.Link] = []
    previous = batch[0].context
    seen = {id(previous)}  # (every context is alive: the batch holds it)
    for item in batch[1:]:
        context = item.context
        if context is previous or id(context) in seen:
            continue
        previous = context
        seen.add(id(context))
        span_context = trace.get_current_span(context).get_span_context()
        if span_context.is_valid:
            links.append(trace.Link(span_context))
    return links

"""ListQueue: the broker's held evaluations through the shared paginator.

The same paging and filter semantics as every other List RPC: the shared
:class:`~drover.paging.Paginator` (signed page tokens bound to the request,
create order either way, AIP-158 page sizes) over a :class:`QueueSource`
that walks the core's create-order index, and CEL filters compiled against
the evaluation's fields plus the broker's ``state`` (``"ready"``,
``"unacked"``, ``"pending"``, ``"waiting"``, ``"blocked"``, ``"failed"``).

A scan budget bounds the work of one call: with a million held
evaluations a filter that matches nothing returns a short (even empty)
page with a token instead of stalling the event loop. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterator
from typing import Any

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.broker import EvalBroker
from drover.broker.core.record import EvalState, QueueEntry
from drover.filter import Field, FieldType, FilterCompiler, Schema
from drover.paging import (
    Key,
    Page,
    PageRequest,
    PageTokenCodec,
    Paginator,
    PagingDefaults,
    Where,
)

__all__ = ["QUEUE_SCHEMA", "QueueSource", "QueueView"]

STATE_FIELD = "state"


def _message(entry: QueueEntry) -> Evaluation:
    return entry.record.eval


QUEUE_SCHEMA = Schema.for_message(
    Evaluation.DESCRIPTOR,
    via=_message,
    extra=[Field(STATE_FIELD, FieldType.enum(s.value for s in EvalState),
                 lambda entry: entry.state.value)],
)

QUEUE_PAGING = PagingDefaults(scan_budget=20_000)


class QueueSource:
    """A :class:`drover.paging.Source` over the core's held evaluations."""

    def __init__(self, core: EvalBroker, schema: Schema = QUEUE_SCHEMA) -> None:
        self._core = core
        self._schema = schema

    @property
    def fields(self) -> Collection[str]:
        return self._schema.names()

    def getter(self, field: str) -> Callable[[QueueEntry], Hashable]:
        return self._schema.getter(field)

    def candidates(
        self, where: Where, *, after: Key | None = None, descending: bool = False,
        prefix: str = "",
    ) -> Iterator[tuple[Key, QueueEntry]]:
        cursor = (after.create_index, after.id) if after is not None else None
        for entry in self._core.iter_queue(cursor, descending=descending):
            yield Key(entry.create_index, entry.id), entry

    def count(self, where: Where) -> int | None:
        return None

    def members(self, where: Where) -> Iterator[QueueEntry]:
        for _, entry in self.candidates(where):
            yield entry


class QueueView:
    def __init__(self, core: EvalBroker, codec: PageTokenCodec | None = None) -> None:
        self._source = QueueSource(core)
        self._filters = FilterCompiler(QUEUE_SCHEMA)
        self._paginator = Paginator(codec, defaults=QUEUE_PAGING)

    def use_codec(self, codec: PageTokenCodec) -> None:
        """Sign page tokens with the cluster's key (known once etcd is reachable)."""
        self._paginator = Paginator(codec, defaults=QUEUE_PAGING)

    def page(self, request: Any) -> Page[QueueEntry]:
        """One page for a ListQueueRequest; raises InvalidFilter/InvalidPageToken."""
        namespace = request.namespace or "default"
        matcher = self._filters.compile(request.filter) if request.filter.strip() else None
        return self._paginator.page(
            self._source,
            PageRequest(
                method="ListQueue",
                page_size=request.page_size,
                page_token=request.page_token,
                order_by=request.order_by,
                namespace=None if namespace == "*" else namespace,
                prefix=request.prefix,
            ),
            matcher,
        )

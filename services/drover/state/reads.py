"""What every read RPC shares: consistency, blocking, QueryMeta, paging.

A read first catches up (unless ``stale``), then, if ``min_index`` is set
and the answer's table index does not exceed it, blocks on the table's
:class:`~drover.state.blocking.IndexWaiters` for the jittered, capped
``max_wait``; it answers with the index it reflects either way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import query_pb2
from drover.errors import InvalidArgument
from drover.state import codec
from drover.state.blocking import BlockingConfig, blocking_wait
from drover.state.cache import Cache
from drover.state.filtering import compile_filter
from drover.state.query import (
    Hit,
    PageLimits,
    Plan,
    Selection,
    page,
    page_size,
    parse_order,
)
from drover.state.tokens import TokenCodec, context_digest

_NS_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
DEFAULT_NAMESPACE = "default"


def check_name(value: str, field: str, *, allow_all: bool = False) -> str:
    """A namespace or id: non-empty, at most 128 of [A-Za-z0-9-_.]."""
    if allow_all and value == "*":
        return value
    if not value:
        raise InvalidArgument(f"{field} is required", metadata={"field": field})
    if len(value) > 128 or not set(value) <= _NS_CHARS:
        raise InvalidArgument(
            f"{field} {value!r} is invalid: use 1-128 letters, digits, '-', '_' or '.'",
            metadata={"field": field},
        )
    return value


def namespace_arg(value: str, *, allow_all: bool = True) -> str:
    return check_name(value or DEFAULT_NAMESPACE, "namespace", allow_all=allow_all)


@dataclass(frozen=True)
class ListRequest:
    method: str
    kind: str
    namespace: str
    prefix: str = ""
    filter: str = ""
    order_by: str = ""
    page_size: int = 0
    page_token: str = ""
    scope: tuple[tuple[str, Any], ...] = ()


class Reader:
    def __init__(
        self, cache: Cache, tokens: TokenCodec, *, limits: PageLimits | None = None,
        blocking: BlockingConfig | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.cache, self.tokens, self.limits = cache, tokens, limits or PageLimits()
        self.blocking, self._rand = blocking or BlockingConfig(), rand

    def meta(self, index: int) -> query_pb2.QueryMeta:
        contact = Duration()
        contact.FromNanoseconds(int(self.cache.last_contact() * 1e9))
        return query_pb2.QueryMeta(index=index, known_leader=False, last_contact=contact)

    async def prepare(self, kind: str, query: query_pb2.QueryOptions) -> int:
        """Catch up and block per ``query``; the index the answer reflects."""
        if not query.stale:
            await self.cache.sync()
        table = self.cache.tables[kind]
        if query.min_index and table.index <= query.min_index:
            requested = query.max_wait.ToTimedelta().total_seconds()
            wait = blocking_wait(requested, self._rand(), self.blocking)
            await self.cache.table_waiters[kind].wait(query.min_index, wait)
        return self.cache.tables[kind].index

    # -- paging ---------------------------------------------------------

    def plan(self, req: ListRequest, *, decode: bool = True) -> tuple[Plan, Selection]:
        flt = compile_filter(req.filter, codec.MESSAGES[req.kind])
        sel = Selection(req.namespace, req.prefix, dict(req.scope), flt)
        return Plan(self.cache.tables[req.kind], sel, decode=decode), sel

    def _context(self, req: ListRequest, descending: bool) -> str:
        return context_digest(
            req.method, req.namespace, req.prefix, req.filter.strip(), str(descending),
            repr(req.scope),
        )

    def list_page(self, req: ListRequest, *, max_size: int | None = None,
                  decode: bool = True) -> tuple[list[Hit], str]:
        size = page_size(req.page_size, self.limits)
        if max_size is not None:
            size = min(size, max_size)
        descending = parse_order(req.order_by)
        plan, _ = self.plan(req, decode=decode)
        ctx = self._context(req, descending)
        after = self.tokens.decode(req.page_token, ctx) if req.page_token else None
        result = page(plan, after, descending, size, self.limits.scan_budget)
        token = self.tokens.encode(result.next_cursor, ctx) if result.next_cursor else ""
        return result.hits, token

    def count(self, req: ListRequest) -> int:
        plan, _ = self.plan(req)
        return plan.count()


def messages(hits: list[Hit]) -> list[Any]:
    return [h.msg for h in hits]

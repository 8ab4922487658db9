"""The StateService's read RPCs, generated from :data:`query_specs.QUERIES`.

Every Get, List and Count runs one of three bodies (:func:`get`,
:func:`list_page`, :func:`count`) parametrized by its row; the rows are
installed as methods of :class:`QueriesRpc` under their RPC names, which is
where grpc's generated ``add_StateServiceServicer_to_server``, the ACL
interceptor's RPC table and the proxy look them up, as for any handler.

All three alike: the request's names (namespace per the row's
:class:`~drover.state.core.query_specs.Scope`, ids, scope fields) are validated
first, so bad input is INVALID_ARGUMENT at once, never after a blocking wait
or a sync; then :meth:`drover.state.reads.Reader.prepare` catches up (unless
``stale``) and blocks per ``min_index``/``max_wait`` on the row's kind; the
answer carries the QueryMeta of the index it reflects. Filters and page
tokens are checked by the reader against the kind's schema and the request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from drover.api.state.v1 import state_pb2_grpc
from drover.errors import NotFound
from drover.paging import PageRequest
from drover.state.cache import Cache
from drover.state.core.query_specs import (
    QUERIES,
    Query,
    Verb,
    count_scope,
    listed_namespace,
    lookup,
)
from drover.state.reads import Reader


class QueriesRpc:
    """Every Get/List/Count of the StateService: one method per row of
    :data:`~drover.state.core.query_specs.QUERIES` (installed below)."""

    def __init__(self, cache: Cache, reader: Reader) -> None:
        self.cache, self.reader = cache, reader


async def get(rpc: QueriesRpc, query: Query, request: Any) -> Any:
    found_by = lookup(query, request)
    index = await rpc.reader.prepare(query.kind, request.query)
    tables = rpc.cache.tables
    found = query.find(tables, query, found_by)
    if found is None:
        raise NotFound(query.missing(query, found_by))
    extra = query.extra(tables, found_by, found) if query.extra is not None else {}
    return query.response(**{query.field: found}, meta=rpc.reader.meta(index), **extra)


async def list_page(rpc: QueriesRpc, query: Query, request: Any) -> Any:
    namespace = listed_namespace(query, request)
    index = await rpc.reader.prepare(query.kind, request.query)
    page = PageRequest(query.rpc, request.page_size, request.page_token, request.order_by,
                       namespace, request.prefix)
    items, token = rpc.reader.list(query.kind, page, request.filter)
    return query.response(**{query.field: items}, next_page_token=token,
                          meta=rpc.reader.meta(index))


async def count(rpc: QueriesRpc, query: Query, request: Any) -> Any:
    scope = count_scope(query, request)
    namespace = listed_namespace(query, request)
    index = await rpc.reader.prepare(query.kind, request.query)
    n = rpc.reader.count(query.kind, request.filter, namespace, scope)
    return query.response(**{query.field: n}, meta=rpc.reader.meta(index))


BODIES: dict[Verb, Callable[[QueriesRpc, Query, Any], Awaitable[Any]]] = {
    Verb.GET: get, Verb.LIST: list_page, Verb.COUNT: count,
}


def handler(query: Query) -> Callable[[QueriesRpc, Any, Any], Awaitable[Any]]:
    """The servicer method answering ``query.rpc``."""
    body = BODIES[query.verb]

    async def method(self: QueriesRpc, request: Any, context: Any) -> Any:
        return await body(self, query, request)

    method.__name__ = query.rpc
    method.__qualname__ = f"{QueriesRpc.__name__}.{query.rpc}"
    method.__doc__ = f"{query.rpc}: a {query.verb.value} of {query.kind} (query_specs row)."
    return method


def install(cls: type, queries: tuple[Query, ...] = QUERIES) -> None:
    """Add one method per row to ``cls``; a row naming no StateService RPC
    is a programming error, refused at import."""
    for query in queries:
        if not hasattr(state_pb2_grpc.StateServiceServicer, query.rpc):
            raise AssertionError(f"query_specs row {query.rpc!r} is no StateService RPC")
        setattr(cls, query.rpc, handler(query))


install(QueriesRpc)

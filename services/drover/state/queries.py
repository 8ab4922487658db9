"""The StateService's read RPCs: every Get, List and Count, one row each of
:data:`~drover.state.core.query_specs.QUERIES`.

:class:`Queries` has three typed bodies (:meth:`Queries.get`,
:meth:`Queries.list_page`, :meth:`Queries.count`) parametrized by the row;
the servicer hands each read RPC to one of them with its row.

All three alike: the request's names (namespace per the row's
:class:`~drover.state.core.query_specs.Scope`, ids, scope fields) are validated
first, so bad input is INVALID_ARGUMENT at once, never after a blocking wait
or a sync; then :meth:`drover.state.reads.Reader.prepare` catches up (unless
``stale``) and blocks per ``min_index``/``max_wait`` on the row's kind; the
answer carries the QueryMeta of the index it reflects. Filters and page
tokens are checked by the reader against the kind's schema and the request.
"""

from __future__ import annotations

from typing import Any

from drover.errors import NotFound
from drover.paging import PageRequest
from drover.state.cache import Cache
from drover.state.core.query_specs import (
    Query,
    count_scope,
    listed_namespace,
    lookup,
)
from drover.state.reads import Reader


class Queries:
    """Every Get/List/Count of the StateService (module doc)."""

    def __init__(self, cache: Cache, reader: Reader) -> None:
        self.cache, self.reader = cache, reader

    async def get(self, query: Query, request: Any) -> Any:
        found_by = lookup(query, request)
        index = await self.reader.prepare(query.kind, request.query)
        tables = self.cache.tables
        found = query.find(tables, query, found_by)
        if found is None:
            raise NotFound(query.missing(query, found_by))
        extra = query.extra(tables, found_by, found) if query.extra is not None else {}
        return query.response(**{query.field: found}, meta=self.reader.meta(index), **extra)

    async def list_page(self, query: Query, request: Any) -> Any:
        namespace = listed_namespace(query, request)
        index = await self.reader.prepare(query.kind, request.query)
        page = PageRequest(query.rpc, request.page_size, request.page_token, request.order_by,
                           namespace, request.prefix)
        items, token = self.reader.list(query.kind, page, request.filter)
        return query.response(**{query.field: items}, next_page_token=token,
                              meta=self.reader.meta(index))

    async def count(self, query: Query, request: Any) -> Any:
        scope = count_scope(query, request)
        namespace = listed_namespace(query, request)
        index = await self.reader.prepare(query.kind, request.query)
        n = self.reader.count(query.kind, request.filter, namespace, scope)
        return query.response(**{query.field: n}, meta=self.reader.meta(index))

"""What every read RPC shares: consistency, blocking, QueryMeta, paging.

A read first catches up (unless ``stale``; a ``max_stale`` bound is
checked per :mod:`drover.state.core.staleness`), then, if ``min_index`` is set
and the answer's table index does not exceed it, blocks on the table's
:class:`~drover.state.blocking.IndexWaiters` for the jittered, capped
``max_wait``; it answers with the index it reflects either way. Every Get,
List and Count goes through :meth:`Reader.prepare`, so they all block alike.

Lists, counts and filtered deletes page through the cache tables with the
one shared :class:`drover.paging.Paginator` (tokens signed with the
cluster's key) and filters compiled by :mod:`drover.filter` against each
kind's proto schema, with the table's record getters as the fast path (a
filter over record fields never decodes a proto).

Namespaces, the same for every List, Count and DeleteEvaluations: empty
means ``"default"``, ``"*"`` means every namespace.

QueryMeta: ``index`` is the table index the answer reflects;
``last_contact`` the age of this replica's last successful etcd call;
``known_leader`` is true while that age is within ``leader_timeout`` (etcd
answers only with a leader, so recent contact means the data has one).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import query_pb2
from drover.filter import Filter, FilterCompiler
from drover.paging import Page, PageRequest, PageTokenCodec, Paginator
from drover.state.blocking import blocking_wait
from drover.state.cache import Cache
from drover.state.config import BlockingConfig, ReadConfig
from drover.state.contact_proof import ContactProof
from drover.state.core import codec, entries, staleness
from drover.state.core.entries import Entry
from drover.state.core.validate import ALL_NAMESPACES, namespace_arg
from drover.state.narrowed import narrow


def list_namespace(value: str) -> str | None:
    """A List/Count/Delete namespace for the paginator: None means all."""
    ns = namespace_arg(value)
    return None if ns == ALL_NAMESPACES else ns




class Reader:
    def __init__(
        self, cache: Cache, tokens: PageTokenCodec, *, config: ReadConfig,
        blocking: BlockingConfig,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.cache, self.config = cache, config
        self.paginator = Paginator(tokens, self.config.paging)
        self.blocking, self._rand = blocking, rand
        self._contact = ContactProof(cache)
        self._filters = {
            kind: FilterCompiler(entries.SCHEMAS[kind], fast_fields=entries.record_getters(kind),
                                 load=entries.decoder(kind))
            for kind in codec.MESSAGES
        }

    def meta(self, index: int) -> query_pb2.QueryMeta:
        age = self.cache.last_contact()
        contact = Duration()
        contact.FromNanoseconds(int(age * 1e9))
        return query_pb2.QueryMeta(index=index, known_leader=age <= self.config.leader_timeout,
                                   last_contact=contact)

    async def prepare(self, kind: str, query: query_pb2.QueryOptions) -> int:
        """Catch up (or check the stale bound) and block per ``query``; the
        index the answer reflects."""
        bound = staleness.bound_of(query.stale,
                                   query.max_stale.ToTimedelta().total_seconds())
        await self._fresh_enough(bound)
        table = self.cache.tables[kind]
        if query.min_index and table.index <= query.min_index:
            requested = query.max_wait.ToTimedelta().total_seconds()
            wait = blocking_wait(requested, self._rand(), self.blocking)
            await self.cache.table_waiters[kind].wait(query.min_index, wait)
        return self.cache.tables[kind].index

    async def _fresh_enough(self, bound: staleness.Bound) -> None:
        """Catch up for a consistent read; for a stale one past its bound,
        one consistent read proves contact (the cache catches up) or the read
        is refused STALE_READ_BOUND, for another replica to serve."""
        if not bound.stale:
            await self.cache.sync()
        elif staleness.decide(bound, self.cache.last_contact()) is staleness.Verdict.PROVE:
            if not await self._contact.within(bound.max_stale):
                raise staleness.refusal(bound, self.cache.last_contact())

    # -- paging ---------------------------------------------------------

    def compile(self, kind: str, expression: str) -> Filter:
        """The request's filter for ``kind``; INVALID_FILTER names what is wrong."""
        return self._filters[kind].compile(expression)

    def page(self, kind: str, request: PageRequest, expression: str, *,
             scan_budget: int | None = None) -> Page[Entry]:  # fmt: skip
        rows = self.cache.tables[kind].rows
        flt = narrow(self.compile(kind, expression), rows)
        return self.paginator.page(rows, request, flt, scan_budget=scan_budget)

    def list(self, kind: str, request: PageRequest, expression: str) -> tuple[list[Any], str]:
        """One page of decoded objects and the next page token."""
        page = self.page(kind, request, expression)
        decode = self.cache.tables[kind].decode_entry
        return [decode(e) for e in page.items], page.next_page_token

    def count(self, kind: str, expression: str, namespace: str | None,
              scope: Mapping[str, str] | None = None) -> int:  # fmt: skip
        rows = self.cache.tables[kind].rows
        flt = narrow(self.compile(kind, expression), rows)
        return self.paginator.count(rows, flt, namespace=namespace, scope=scope)

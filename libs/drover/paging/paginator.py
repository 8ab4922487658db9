"""The one paginator behind every List (and filtered Delete/Count) RPC.

Given a :class:`Source` (usually an :class:`~drover.paging.IndexedCollection`),
a :class:`PageRequest` and an optional :class:`Matcher` (a compiled filter),
:meth:`Paginator.page` returns up to ``page_size`` matching objects in create
order and a ``next_page_token`` that is empty exactly when nothing is left to
examine.

Guarantees, while other writes happen between pages: the cursor is the key of
the last object examined, so every object present from the first page to the
last and matching throughout is returned exactly once; objects created during
an ascending walk show up at its end; deleted ones simply vanish.

Work is bounded: the namespace, the RPC's scope and the filter's top-level
equalities (``Matcher.constraints``) pick the smallest index bucket to walk;
a ``scan_budget`` caps the candidates examined per call, in which case a page
may hold fewer than ``page_size`` objects and still carry a token
(DeleteEvaluations relies on this). Once a page is full, at most
``PagingDefaults.lookahead`` further candidates are examined to learn whether
another match exists.

:meth:`Paginator.count` answers from index bucket sizes when the filter is
exactly a conjunction of equalities on indexed fields, else by scanning.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from drover.paging.collection import Where
from drover.paging.index import Key
from drover.paging.request import (
    DEFAULTS,
    PageRequest,
    PagingDefaults,
    parse_order_by,
    resolve_page_size,
)
from drover.paging.token import PageTokenCodec, TokenBinding

__all__ = ["Matcher", "Page", "Paginator", "Source"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

NAMESPACE_FIELD = "namespace"
PREFIX_FIELD = "id"


class Matcher(Protocol):
    """What the paginator needs of a compiled filter (drover.filter.Filter)."""

    @property
    def expression(self) -> str: ...

    @property
    def constraints(self) -> Mapping[str, frozenset[Hashable]]:
        """Top-level ``field == v`` / ``field in [...]`` conjuncts; implied by a match."""
        ...

    @property
    def exact(self) -> bool:
        """True if a match is *exactly* satisfying ``constraints``."""
        ...

    def matches(self, item: object) -> bool: ...


class Source(Protocol[T]):
    """What the paginator needs of the collection it pages through."""

    @property
    def fields(self) -> Collection[str]: ...

    def getter(self, field: str) -> Callable[[T], Hashable]: ...

    def candidates(
        self, where: Where, *, after: Key | None = None, descending: bool = False,
        prefix: str = "",
    ) -> Iterator[tuple[Key, T]]:
        """A superset of the matches strictly after ``after``, in key order.

        ``prefix`` is a hint (the paginator still checks it): a source with
        an id index may walk only the ids having it.
        """
        ...

    def count(self, where: Where) -> int | None: ...

    def members(self, where: Where) -> Iterable[T]:
        """A superset of the matches in no particular order (for counting)."""
        ...


@dataclass(frozen=True)
class Page(Generic[T_co]):
    items: tuple[T_co, ...]
    next_page_token: str
    # Candidates examined to build this page (for metrics and tests).
    examined: int


class Paginator:
    """Pages through a Source under one token codec and one set of defaults."""

    def __init__(
        self,
        codec: PageTokenCodec | None = None,
        defaults: PagingDefaults = DEFAULTS,
        *,
        prefix_field: str = PREFIX_FIELD,
    ) -> None:
        self.codec = codec or PageTokenCodec()
        self.defaults = defaults
        self._prefix_field = prefix_field

    def binding(self, request: PageRequest, matcher: Matcher | None = None) -> TokenBinding:
        return TokenBinding(
            method=request.method,
            filter=matcher.expression if matcher is not None else "",
            order=parse_order_by(request.order_by),
            namespace=request.namespace,
            prefix=request.prefix,
            page_size=resolve_page_size(request.page_size, self.defaults),
            scope=request.scope_items(),
            options=tuple(sorted(request.options.items())),
        )

    def page(
        self,
        source: Source[T],
        request: PageRequest,
        matcher: Matcher | None = None,
        *,
        scan_budget: int | None = None,
    ) -> Page[T]:
        """One page of ``source`` for ``request``; validates every request field."""
        binding = self.binding(request, matcher)
        after = self.codec.decode(request.page_token, binding) if request.page_token else None
        budget = scan_budget if scan_budget is not None else self.defaults.scan_budget
        if budget is not None and budget < 1:
            raise ValueError(f"scan_budget must be >= 1, got {budget}")
        size = binding.page_size
        scope = _scope(request)
        where = _merge(scope, matcher.constraints if matcher is not None else {})
        if where is None:  # contradictory equalities: nothing can match
            return Page((), "", 0)
        self._check_fields(source, scope)
        accept = self._acceptor(source, where, request.prefix, matcher)

        items: list[T] = []
        cursor: Key | None = None
        examined = extra = 0
        lookahead = self.defaults.lookahead
        walk = source.candidates(where, after=after, descending=binding.order.descending,
                                 prefix=request.prefix)
        for key, item in walk:
            full = len(items) >= size
            if (budget is not None and examined >= budget) or (full and extra >= lookahead):
                return Page(tuple(items), self._token(binding, cursor), examined)
            examined += 1
            ok = accept(item)
            if full:
                if ok:  # another match exists: the next page starts with it
                    return Page(tuple(items), self._token(binding, cursor), examined)
                extra += 1
            elif ok:
                items.append(item)
            cursor = key
        return Page(tuple(items), "", examined)

    def count(
        self,
        source: Source[T],
        matcher: Matcher | None = None,
        *,
        namespace: str | None = None,
        scope: Mapping[str, str] | None = None,
    ) -> int:
        """How many objects match, from the indexes alone when the filter allows."""
        request = PageRequest(method="", namespace=namespace, scope=dict(scope or {}))
        scoped = _scope(request)
        where = _merge(scoped, matcher.constraints if matcher is not None else {})
        if where is None:
            return 0
        self._check_fields(source, scoped)
        if matcher is None or matcher.exact:
            counted = source.count(where)
            if counted is not None:
                return counted
        accept = self._acceptor(source, where, "", matcher)
        # A count needs no order: walk the chosen bucket (or everything) as stored.
        return sum(map(accept, source.members(where)))

    # -- internals ------------------------------------------------------------

    def _token(self, binding: TokenBinding, cursor: Key | None) -> str:
        assert cursor is not None, "a token is only made after examining a candidate"
        return self.codec.encode(binding, cursor)

    def _check_fields(self, source: Source[T], scope: Where) -> None:
        missing = [name for name in scope if name not in source.fields]
        if missing:
            raise ValueError(f"the source cannot scope by {missing}; give it extractors")

    def _acceptor(
        self, source: Source[T], where: Where, prefix: str, matcher: Matcher | None
    ) -> Callable[[T], bool]:
        # Only the fields the source can read are checked here; the filter
        # itself re-checks its own constraints on whatever the source lacks.
        checks = [(source.getter(name), values) for name, values in where.items()
                  if name in source.fields]
        id_of = source.getter(self._prefix_field) if prefix else None
        matches = matcher.matches if matcher is not None else None
        if not checks and id_of is None and matches is not None:
            return matches  # one call per candidate: the hot loop of a big count

        def accept(item: T) -> bool:
            for get, values in checks:
                if get(item) not in values:
                    return False
            if id_of is not None and not str(id_of(item)).startswith(prefix):
                return False
            return matches is None or matches(item)

        return accept


def _scope(request: PageRequest) -> dict[str, frozenset[Hashable]]:
    where: dict[str, frozenset[Hashable]] = {
        name: frozenset((value,)) for name, value in request.scope_items()
    }
    if request.namespace is not None:
        where[NAMESPACE_FIELD] = frozenset((request.namespace,))
    return where


def _merge(a: Where, b: Where) -> dict[str, frozenset[Hashable]] | None:
    """The conjunction of two constraint sets; None if it is unsatisfiable."""
    merged = dict(a)
    for name, values in b.items():
        merged[name] = merged[name] & values if name in merged else values
    if any(not values for values in merged.values()):
        return None
    return merged

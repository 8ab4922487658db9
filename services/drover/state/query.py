"""Paged, filtered, ordered reads over one cache table (pure).

A :class:`Selection` is what a List/Count/Delete request matches: namespace
("*" all), an id prefix, scope equalities (e.g. ``job_id`` for a scoped
delete) and a CEL :class:`~drover.state.filtering.Filter`. Equalities on
indexed fields (from the scope, the namespace, and the filter's top-level
``&&`` conjuncts) pick the smallest secondary index as the candidate set, so
``status == "pending"`` over a million evaluations walks only pending ones.

:func:`page` walks candidates in create order (either direction) strictly
after a cursor, and stops at ``limit`` matches or after ``budget``
candidates, so no call scans without bound: a partial page still returns a
cursor, and the client continues (AIP-158 permits short pages).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from drover.errors import InvalidArgument
from drover.state.activation import enum_short
from drover.state.filtering import MATCH_ALL, Filter
from drover.state.tables import Entry, Order, OrderedSet, Table


@dataclass(frozen=True)
class PageLimits:
    default_size: int = 100
    max_size: int = 1000
    scan_budget: int = 50_000


def page_size(requested: int, limits: PageLimits = PageLimits()) -> int:
    """AIP-158: 0 means the default, above the maximum means the maximum."""
    if requested < 0:
        raise InvalidArgument(
            f"page_size must not be negative (got {requested}); 0 means the default "
            f"({limits.default_size})", metadata={"field": "page_size"},
        )
    return limits.default_size if requested == 0 else min(requested, limits.max_size)


def parse_order(order_by: str) -> bool:
    """True for descending create-index order."""
    words = order_by.lower().split()
    if not words or words == ["create_index"] or words == ["create_index", "asc"]:
        return False
    if words == ["create_index", "desc"]:
        return True
    raise InvalidArgument(
        f"order_by {order_by!r} is not supported; use \"create_index\" or "
        f"\"create_index desc\"", metadata={"field": "order_by"},
    )


@dataclass(frozen=True)
class Selection:
    namespace: str = "*"
    prefix: str = ""
    scope: dict[str, Any] = field(default_factory=dict)
    filter: Filter = MATCH_ALL

    def equalities(self) -> dict[str, Any]:
        eqs = {**self.filter.equalities, **self.scope}
        if self.namespace != "*":
            eqs["namespace"] = self.namespace
        return eqs


@dataclass(frozen=True, slots=True)
class Hit:
    order: Order
    entry: Entry
    msg: Any


def _field_value(msg: Any, name: str) -> Any:
    fd = msg.DESCRIPTOR.fields_by_name.get(name)
    if fd is not None and fd.enum_type is not None:
        return enum_short(msg, name)
    return getattr(msg, name)


class Plan:
    """How a selection walks one table."""

    def __init__(self, table: Table, sel: Selection, *, decode: bool = True) -> None:
        self.table, self.sel = table, sel
        indexed = table.secondary.keys() | table.indexed_fields()
        eqs = sel.equalities()
        self.index_eqs = {k: v for k, v in eqs.items() if k in indexed}
        self.other_eqs = {k: v for k, v in sel.scope.items() if k not in self.index_eqs}
        sets = [(table.candidates(k, v), k) for k, v in self.index_eqs.items()]
        sets.sort(key=lambda s: len(s[0]))
        self.candidates: OrderedSet = sets[0][0] if sets else table.order
        self.chosen = sets[0][1] if sets else None
        self._ns_prefix = "" if sel.namespace == "*" else sel.namespace + "/"
        # When the chosen index alone decides a match, a caller that needs no
        # message (a delete) skips decoding: the hot loop of a big delete.
        f = sel.filter
        self._index_decides = (
            len(self.index_eqs) - (1 if "namespace" in self.index_eqs else 0) <= 1
            and not self.other_eqs and f.exact and set(f.equalities) <= set(self.index_eqs)
        )
        self._decode = decode

    def match(self, order: Order) -> Hit | None:
        nsid = order[1]
        if self._ns_prefix and not nsid.startswith(self._ns_prefix):
            return None
        if self.sel.prefix and not nsid.split("/", 1)[1].startswith(self.sel.prefix):
            return None
        entry = self.table.objects.get(nsid)
        if entry is None:
            return None
        if self._index_decides and not self._decode:
            return Hit(order, entry, None)
        msg = self.table.decode_entry(entry)
        for k, v in self.index_eqs.items():
            if k != self.chosen and _field_value(msg, k) != v:
                return None
        for k, v in self.other_eqs.items():
            if _field_value(msg, k) != v:
                return None
        if not self.sel.filter.exact and not self.sel.filter.matches(msg):
            return None
        if self.sel.filter.exact:
            for k, v in self.sel.filter.equalities.items():
                if k not in self.index_eqs and _field_value(msg, k) != v:
                    return None
        return Hit(order, entry, msg)

    def walk(self, after: Order | None, descending: bool) -> Iterator[tuple[Order, Hit | None]]:
        for order in self.candidates.iterate(after, descending):
            yield order, self.match(order)

    def count(self) -> int:
        """Matches in the table; from index sizes when the selection allows."""
        f = self.sel.filter
        simple = not self.sel.prefix and not self.other_eqs and (
            f.exact and set(f.equalities) <= set(self.index_eqs)
        )
        if simple and len(self.index_eqs) <= 1:
            return len(self.candidates)
        return sum(1 for _, hit in self.walk(None, False) if hit is not None)


@dataclass(frozen=True)
class PageResult:
    hits: list[Hit]
    # The last examined position when more may follow; None at the end.
    next_cursor: Order | None
    scanned: int


def page(plan: Plan, after: Order | None, descending: bool, limit: int, budget: int) -> PageResult:
    hits: list[Hit] = []
    scanned = 0
    last: Order | None = None
    for order, hit in plan.walk(after, descending):
        if len(hits) >= limit:
            return PageResult(hits, last, scanned)
        scanned += 1
        last = order
        if hit is not None:
            hits.append(hit)
        elif scanned >= budget:
            return PageResult(hits, last, scanned)
    return PageResult(hits, None, scanned)

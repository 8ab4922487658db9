"""What a List RPC asks for: page size, order and scope, validated once.

``page_size`` follows AIP-158: ``0`` means the server default, anything
above the maximum is clamped to it, a negative size is INVALID_ARGUMENT.
``order_by`` accepts only the create order, the one order every listed kind
shares and the one under which a ``(create_index, id)`` cursor is stable:
``""``, ``"create_index"`` and ``"create_index asc"`` walk oldest first (the
default), ``"create_index desc"`` newest first.

The defaults live in one frozen :class:`PagingDefaults`; a service passes its
own if it must, never literals at call sites.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from drover.errors import InvalidArgument

__all__ = [
    "ORDER_FIELD",
    "Order",
    "PageRequest",
    "PagingDefaults",
    "parse_order_by",
    "resolve_page_size",
]

ORDER_FIELD = "create_index"
_ACCEPTED_ORDERS = f'"", "{ORDER_FIELD}", "{ORDER_FIELD} asc" or "{ORDER_FIELD} desc"'


class Order(enum.Enum):
    ASCENDING = "asc"
    DESCENDING = "desc"

    @property
    def descending(self) -> bool:
        return self is Order.DESCENDING


@dataclass(frozen=True)
class PagingDefaults:
    """Page sizes and scan limits shared by every List RPC.

    ``lookahead``: once a page is full, how many further candidates the
    paginator may examine to learn whether another match exists (so the last
    page usually carries an empty token instead of leading to an empty page).
    ``scan_budget``: default cap on candidates examined per call (``None``:
    no cap); a capped page may hold fewer than ``page_size`` items and still
    carry a token.
    """

    default: int = 100
    maximum: int = 1000
    lookahead: int = 64
    scan_budget: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.default <= self.maximum:
            raise ValueError(f"need 0 < default <= maximum, got {self.default}, {self.maximum}")
        if self.lookahead < 0:
            raise ValueError(f"lookahead must be >= 0, got {self.lookahead}")
        if self.scan_budget is not None and self.scan_budget < 1:
            raise ValueError(f"scan_budget must be >= 1 or None, got {self.scan_budget}")


DEFAULTS = PagingDefaults()


def resolve_page_size(
    page_size: int, defaults: PagingDefaults = DEFAULTS, *, field: str = "page_size"
) -> int:
    """The effective page size for a requested one (AIP-158)."""
    if page_size < 0:
        raise InvalidArgument(
            f"{field} must not be negative, got {page_size}", metadata={"field": field}
        )
    if page_size == 0:
        return defaults.default
    return min(page_size, defaults.maximum)


def parse_order_by(order_by: str, *, field: str = "order_by") -> Order:
    """Parse ``order_by``; only the create order is accepted."""
    words = order_by.split()
    if not words or (words == [ORDER_FIELD]) or words == [ORDER_FIELD, "asc"]:
        return Order.ASCENDING
    if words == [ORDER_FIELD, "desc"]:
        return Order.DESCENDING
    raise InvalidArgument(
        f"{field} {order_by!r} is not supported; use {_ACCEPTED_ORDERS}",
        metadata={"field": field},
    )


@dataclass(frozen=True)
class PageRequest:
    """One page of a List RPC, as the paginator needs it.

    ``method`` names the RPC ("ListEvaluations") so that a token from one RPC
    is refused by another. ``namespace=None`` means every namespace.
    ``scope`` holds further equality restrictions the RPC applies besides the
    filter (e.g. ``{"job_id": "web"}``); like namespace and prefix it is bound
    into the page token, and so are ``options``. The filter expression is bound through the matcher
    given to :meth:`Paginator.page`.
    """

    method: str
    page_size: int = 0
    page_token: str = ""
    order_by: str = ""
    namespace: str | None = None
    prefix: str = ""
    scope: Mapping[str, str] = field(default_factory=dict)
    #: Bound into the token like scope, but no restriction of the walk: the
    #: fields that change what the page is for (``{"dry_run": "true"}``).
    options: Mapping[str, str] = field(default_factory=dict)

    def scope_items(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.scope.items()))

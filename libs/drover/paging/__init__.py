"""Paging for every List RPC: one paginator, signed cursors, ordered indexes.

Pure library: no etcd, no asyncio, no gRPC. A service keeps its objects in an
:class:`IndexedCollection` (create order plus secondary indexes), compiles the
request's filter with :mod:`drover.filter`, and asks a :class:`Paginator`
(holding the cluster's :class:`PageTokenCodec`) for a :class:`Page`::

    paginator = Paginator(PageTokenCodec(cluster_key))
    page = paginator.page(evals, PageRequest(method="ListEvaluations",
                                             namespace=ns, prefix=req.prefix,
                                             order_by=req.order_by,
                                             page_size=req.page_size,
                                             page_token=req.page_token), flt)

Errors: bad ``page_size``/``order_by`` raise ``drover.errors.InvalidArgument``
(``metadata['field']`` names the field); bad tokens raise
:class:`InvalidPageToken` (reason ``INVALID_PAGE_TOKEN``).
"""

from drover.paging.collection import IndexedCollection, Where
from drover.paging.errors import InvalidPageToken
from drover.paging.index import Key, OrderedIndex, SecondaryIndex
from drover.paging.paginator import Matcher, Page, Paginator, Source
from drover.paging.request import (
    ORDER_FIELD,
    Order,
    PageRequest,
    PagingDefaults,
    parse_order_by,
    resolve_page_size,
)
from drover.paging.token import CLUSTER_SECRET, DEFAULT_TOKEN_KEY, PageTokenCodec, TokenBinding

__all__ = [
    "CLUSTER_SECRET",
    "DEFAULT_TOKEN_KEY",
    "ORDER_FIELD",
    "IndexedCollection",
    "InvalidPageToken",
    "Key",
    "Matcher",
    "Order",
    "OrderedIndex",
    "Page",
    "PageRequest",
    "PageTokenCodec",
    "Paginator",
    "PagingDefaults",
    "SecondaryIndex",
    "Source",
    "TokenBinding",
    "Where",
    "parse_order_by",
    "resolve_page_size",
]

"""The Nodes page: status, eligibility, drain and its progress, and the
allocations each node of the page runs (one bounded count per node)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.ui.backend import Backend
from drover.ui.present import drain_text
from drover.ui.queries import NODE_STATUSES, form, node_allocs, node_filter

#: Allocations counted per node; past it the count reads "N+".
COUNT_PAGE = 1000


async def running_on(backend: Backend, node_id: str) -> tuple[int, bool]:
    """How many allocations ``node_id`` still runs (one page), and whether
    there are more than that page."""
    resp = await backend.state.ListAllocations(state_pb2.ListAllocationsRequest(
        namespace="*", filter=node_allocs(node_id), page_size=COUNT_PAGE),
        timeout=backend.timeout)
    return len(resp.allocations), bool(resp.next_page_token)


async def load(backend: Backend, query: Mapping[str, str], page_size: int) -> dict[str, Any]:
    f = form(query, "status", "page")
    resp = await backend.state.ListNodes(state_pb2.ListNodesRequest(
        filter=node_filter(f["status"]), page_size=page_size, page_token=f["page"]),
        timeout=backend.timeout)
    counts = await asyncio.gather(*(running_on(backend, n.id) for n in resp.nodes))
    rows = [{"node": n, "allocs": f"{c}{'+' if more else ''}", "drain": drain_text(n, c)}
            for n, (c, more) in zip(resp.nodes, counts, strict=True)]
    return {"nodes": rows, "next_page": resp.next_page_token, "index": resp.meta.index,
            "form": f, "statuses": NODE_STATUSES}

"""The Evaluations page: evaluations filtered by status and job, one page at
a time, newest first; the broker's ready, unacked and blocked counts by
scheduler above them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.ui.backend import Backend
from drover.ui.errors import failure
from drover.ui.present import counts_by
from drover.ui.queries import EVAL_STATUSES, blocked, eval_filter, form

#: Blocked evaluations counted per scheduler from one page of the broker's
#: queue; past it the count reads "N+".
BLOCKED_PAGE = 1000


async def broker_counts(backend: Backend) -> dict[str, Any]:
    """The broker's queues by scheduler, or why they cannot be shown (the
    token may read jobs but not the operator's broker stats)."""
    t = backend.timeout
    try:
        stats = (await backend.broker.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(),
                                                     timeout=t)).stats
        queue = await backend.broker.ListQueue(broker_pb2.ListQueueRequest(
            namespace="*", filter=blocked(), page_size=BLOCKED_PAGE), timeout=t)
    except grpc.RpcError as err:
        return {"error": failure(err)[2]}
    by_type = counts_by(q.evaluation.type for q in queue.evaluations)
    more = "+" if queue.next_page_token else ""
    names = sorted(set(stats.by_scheduler) | set(by_type))
    rows = [{"scheduler": n, "ready": stats.by_scheduler[n].ready if n in stats.by_scheduler
             else 0, "unacked": stats.by_scheduler[n].unacked if n in stats.by_scheduler
             else 0, "blocked": f"{by_type.get(n, 0)}{more}"} for n in names]
    return {"error": "", "rows": rows, "stats": stats}


async def load(backend: Backend, query: Mapping[str, str], page_size: int) -> dict[str, Any]:
    f = form(query, "namespace", "status", "job", "page")
    namespace = f["namespace"] or "default"
    resp = await backend.state.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace=namespace, filter=eval_filter(f["status"], f["job"]),
        order_by="create_index desc", page_size=page_size, page_token=f["page"]),
        timeout=backend.timeout)
    return {"evaluations": list(resp.evaluations), "next_page": resp.next_page_token,
            "index": resp.meta.index, "form": f, "namespace": namespace,
            "statuses": EVAL_STATUSES, "broker": await broker_counts(backend)}

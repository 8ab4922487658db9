"""The Jobs page: every job with type, status, version and its allocation
summary by client status; filtered by name and status; one page at a time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.ui.backend import Backend
from drover.ui.present import SUMMARY_STATES, summary
from drover.ui.queries import JOB_STATUSES, form, job_filter


async def load(backend: Backend, query: Mapping[str, str], page_size: int) -> dict[str, Any]:
    f = form(query, "namespace", "name", "status", "page")
    namespace = f["namespace"] or "default"
    resp = await backend.state.ListJobs(state_pb2.ListJobsRequest(
        namespace=namespace, filter=job_filter(f["name"], f["status"]),
        page_size=page_size, page_token=f["page"]), timeout=backend.timeout)
    return {"jobs": [{"job": j, "summary": summary(j)} for j in resp.jobs],
            "next_page": resp.next_page_token, "index": resp.meta.index,
            "form": f, "namespace": namespace, "statuses": JOB_STATUSES,
            "summary_states": SUMMARY_STATES}

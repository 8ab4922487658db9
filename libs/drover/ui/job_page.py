"""A job's page: the job, its versions (a diff between any two), its latest
deployment with per-group progress and canaries, and one page of its
allocations (a job of 10,000 allocations sends one page, never all)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2, job_pb2
from drover.jobspec.diff import diff
from drover.ui.backend import Backend
from drover.ui.present import group_progress, needs_promotion, summary
from drover.ui.queries import form, job_allocs, job_deployments


def pick_diff(versions: Sequence[job_pb2.Job], a: str, b: str) -> dict[str, Any] | None:
    """The versions to compare (``a`` older, ``b`` newer; default: the latest
    against the one before it) and the diff's lines; None with one version."""
    by = {str(v.version): v for v in versions}
    newest = sorted(versions, key=lambda v: v.version)
    if len(newest) < 2:
        return None
    new = by.get(b) or newest[-1]
    old = by.get(a) or next((v for v in reversed(newest) if v.version < new.version),
                            newest[0])
    return {"a": old.version, "b": new.version,
            "lines": [d.line() for d in diff(old, new)]}


async def latest_deployment(backend: Backend, namespace: str,
                            job_id: str) -> deployment_pb2.Deployment | None:
    resp = await backend.state.ListDeployments(state_pb2.ListDeploymentsRequest(
        namespace=namespace, filter=job_deployments(job_id), order_by="create_index desc",
        page_size=1), timeout=backend.timeout)
    return resp.deployments[0] if resp.deployments else None


async def load(backend: Backend, namespace: str, job_id: str, query: Mapping[str, str],
               page_size: int) -> dict[str, Any]:
    f = form(query, "alloc_page", "a", "b")
    t = backend.timeout
    job_resp, versions, deployment, allocs = await asyncio.gather(
        backend.state.GetJob(state_pb2.GetJobRequest(namespace=namespace, id=job_id),
                             timeout=t),
        backend.state.ListJobVersions(state_pb2.ListJobVersionsRequest(
            namespace=namespace, id=job_id), timeout=t),
        latest_deployment(backend, namespace, job_id),
        backend.state.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace=namespace, filter=job_allocs(job_id), order_by="create_index desc",
            page_size=page_size, page_token=f["alloc_page"]), timeout=t),
    )
    job = job_resp.job
    ordered = sorted(versions.versions, key=lambda v: v.version, reverse=True)
    return {
        "job": job, "summary": summary(job), "versions": ordered,
        "diff": pick_diff(ordered, f["a"], f["b"]),
        "deployment": deployment,
        "groups": group_progress(deployment) if deployment is not None else [],
        "needs_promotion": needs_promotion(deployment),
        "allocations": list(allocs.allocations), "next_page": allocs.next_page_token,
        "index": max(job_resp.meta.index, allocs.meta.index), "form": f,
        "namespace": namespace,
        "group_counts": {tg.name: tg.count for tg in job.task_groups},
    }

"""One evaluation's job read for planning: one GetJobSnapshot (the job, its
versions, its deployment and its allocations, all at one revision).

A job planned lately is read as a delta over the allocations kept from then
(:mod:`.job_allocs`); a job with more allocations than one answer holds is
listed page by page.
"""

from __future__ import annotations

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, evaluation_pb2

from .job_allocs import JobAllocCache, JobReads

#: Allocations asked for per page when a job's do not fit one answer.
PAGE_SIZE = 1000


async def read_job(state: state_pb2_grpc.StateServiceStub, cache: JobAllocCache,
                   ev: evaluation_pb2.Evaluation) -> JobReads:
    """The evaluation's job reads (module doc); the cache keeps its allocations."""
    ns = ev.namespace or "default"
    since = cache.since(ns, ev.job_id)
    resp = await state.GetJobSnapshot(state_pb2.GetJobSnapshotRequest(
        namespace=ns, id=ev.job_id, allocations_modified_after=since), timeout=30)
    if since:
        merged = cache.merge(ns, ev.job_id, resp.snapshot)
        if merged is not None:
            cache.keep(ns, ev.job_id, resp.meta.index, merged)
            return JobReads(resp.snapshot, merged)
        resp = await state.GetJobSnapshot(state_pb2.GetJobSnapshotRequest(
            namespace=ns, id=ev.job_id), timeout=30)
    got = resp.snapshot
    allocs = list(got.allocations)
    if not got.allocations_complete:
        allocs += await _list_allocs(state, ns, ev.job_id)
    cache.keep(ns, ev.job_id, resp.meta.index, allocs)
    return JobReads(got, allocs)


async def _list_allocs(state: state_pb2_grpc.StateServiceStub, ns: str,
                       job_id: str) -> list[allocation_pb2.Allocation]:
    allocs: list[allocation_pb2.Allocation] = []
    token = ""
    while True:
        resp = await state.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace=ns, filter=f'job_id == "{job_id}"', page_size=PAGE_SIZE,
            page_token=token), timeout=30)
        allocs.extend(resp.allocations)
        token = resp.next_page_token
        if not token:
            break
    return allocs

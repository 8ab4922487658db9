"""GetJobSnapshot: what a scheduler reads of one evaluation's job, at one
revision of the cache (pure: reads :class:`~.tables.Tables`, no I/O).

Nomad's worker plans from a state snapshot; drover's reference worker made
four reads for it (the job, its versions, the deployment of its version, its
allocations), each a call and a catch-up with etcd, and each at its own
revision. This is the same answer in one read, all at the revision the
call's catch-up reached:

- ``job``: unset when the namespace holds no such job (a purged job's
  evaluation must still see its allocations, to stop them): never
  NOT_FOUND;
- ``versions``: every tracked version, newest first
  (:func:`.query_specs.job_versions`);
- ``deployment``: the newest (by create index) deployment of the job's
  current version, as ListDeployments ordered by ``create_index desc``
  answers it;
- ``allocations``: the job's allocations in create order, with
  ``allocations_complete``; none, and not complete, when it has more than
  ``limit`` (the caller lists them, page by page).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2
from drover.state.core import codec

if TYPE_CHECKING:
    from drover.state.core.query_specs import Lookup, Query, TablesView

#: Allocations one answer carries: ListAllocations' largest page.
ALLOCATIONS_LIMIT = 1000


def job_snapshot(tables: TablesView, ns: str, job_id: str,
                 limit: int = ALLOCATIONS_LIMIT) -> state_pb2.JobSnapshot:
    """The snapshot of ``ns/job_id`` (module doc)."""
    out = state_pb2.JobSnapshot()
    job = tables[codec.JOBS].decode(f"{ns}/{job_id}")
    if job is not None:
        out.job.CopyFrom(job)
    versions_table = tables[codec.JOB_VERSIONS]
    versions = [v for v in (versions_table.decode(o.id) for o in versions_table.candidates(
        "job", f"{ns}/{job_id}").iterate(None, True)) if v is not None]
    versions.sort(key=lambda j: j.version, reverse=True)
    out.versions.extend(versions)
    if job is not None:
        deployments = tables[codec.DEPLOYMENTS]
        for order in deployments.candidates("job_id", job_id).iterate(None, True):
            if not order.id.startswith(f"{ns}/"):
                continue
            d = deployments.decode(order.id)
            if d is not None and d.job_version == job.version:
                out.deployment.CopyFrom(d)
                break
    allocs_table = tables[codec.ALLOCATIONS]
    allocations: list[allocation_pb2.Allocation] = []
    for order in allocs_table.candidates("job_id", job_id).iterate(None, False):
        if not order.id.startswith(f"{ns}/"):
            continue
        if len(allocations) >= limit:
            return out  # allocations_complete stays false: the caller lists them
        a = allocs_table.decode(order.id)
        if a is not None:
            allocations.append(a)
    out.allocations.extend(allocations)
    out.allocations_complete = True
    return out


def find_snapshot(tables: TablesView, query: Query, lookup: Lookup) -> state_pb2.JobSnapshot:
    """GetJobSnapshot's row hook: never missing (no job is an answer too)."""
    assert lookup.namespace is not None
    return job_snapshot(tables, lookup.namespace, lookup.id)

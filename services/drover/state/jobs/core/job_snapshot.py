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
- ``versions``: every tracked version, newest first, as the caller read
  them (:func:`.query_specs.versions_of`);
- ``deployment``: the newest (by create index) deployment of the job's
  current version, as ListDeployments ordered by ``create_index desc``
  answers it;
- ``allocations``: the job's allocations in create order, with
  ``allocations_complete``; none, and not complete, when it has more than
  ``limit`` (the caller lists them, page by page). With ``modified_after``
  (a delta read), only those modified after that index: a scheduler that
  kept the job's allocations from an earlier answer reads what changed, not
  the whole job again (a job of 1,000 allocations rolled out 25 at a time
  was read whole forty times);
- ``alloc_set``: the whole set's count and newest create index, whatever
  was carried, for the delta reader to check its merge against (an
  allocation deleted since shows only here).
"""

from __future__ import annotations

from collections.abc import Sequence

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.state.core import codec
from drover.state.core.table_views import TablesView

#: Allocations one answer carries: ListAllocations' largest page.
ALLOCATIONS_LIMIT = 1000


def job_snapshot(tables: TablesView, ns: str, job_id: str, versions: Sequence[job_pb2.Job],
                 limit: int = ALLOCATIONS_LIMIT,
                 modified_after: int = 0) -> state_pb2.JobSnapshot:
    """The snapshot of ``ns/job_id`` (module doc), with its ``versions``."""
    out = state_pb2.JobSnapshot(versions=versions)
    job = tables[codec.JOBS].decode(f"{ns}/{job_id}")
    if job is not None:
        out.job.CopyFrom(job)
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
    complete = True
    count = newest = 0
    for order in allocs_table.candidates("job_id", job_id).iterate(None, False):
        if not order.id.startswith(f"{ns}/"):
            continue
        count += 1
        newest = max(newest, order.create_index)
        if not complete or (modified_after and allocs_table.mod(order.id) <= modified_after):
            continue
        if len(allocations) >= limit:
            complete = False  # none carried: the caller lists them
            allocations.clear()
            continue
        a = allocs_table.decode(order.id)
        if a is not None:
            allocations.append(a)
    out.allocations.extend(allocations)
    out.allocations_complete = complete
    out.alloc_set.count, out.alloc_set.max_create_index = count, newest
    return out


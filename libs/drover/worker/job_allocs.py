"""The allocations of the jobs a worker planned lately, for delta reads.

A rolling update of a job of 1,000 allocations, 25 at a time, is forty
evaluations of the same job; read whole, each costs the state service and
the worker the job's every allocation (and its stopped ones, kept until
GC): forty times 2,000 decodes for 50 changes each. So the worker keeps
each job's allocations as of the answer that carried them (its
``meta.index``) and asks GetJobSnapshot only for those modified after it
(``allocations_modified_after``). The merge is trusted only when it matches
the answer's ``alloc_set`` -- the job's whole set, as a count and the
newest create index -- so an allocation deleted since (GC), or an answer
from a replica that does not know delta reads, falls back to a whole read.
And the plan is checked against the same two numbers when it is applied
(SubmitPlan's ``job_allocs``): a merge that were wrong is a stale plan,
never a wrong one.

Bounded: the jobs planned most recently, at most ``max_jobs`` of them (an
LRU); the allocations of one job are at most what one job holds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2

__all__ = ["JobAllocCache", "JobReads", "Kept"]

#: Jobs whose allocations a worker keeps (most recently planned).
MAX_JOBS = 256


@dataclass
class JobReads:
    """What a worker read of one evaluation's job: the snapshot (its
    ``allocations`` field unused) and the job's allocations in create order
    (shared with the cache: read only, as the planner copies before it
    changes one)."""

    snapshot: state_pb2.JobSnapshot
    allocs: list[allocation_pb2.Allocation]


@dataclass
class Kept:
    """One job's allocations (by id) as of ``index``."""

    index: int
    allocs: dict[str, allocation_pb2.Allocation]


class JobAllocCache:
    """Each recently planned job's allocations (module doc)."""

    def __init__(self, max_jobs: int = MAX_JOBS) -> None:
        self._jobs: OrderedDict[tuple[str, str], Kept] = OrderedDict()
        self._max = max_jobs
        self.hits = self.misses = 0

    def since(self, ns: str, job_id: str) -> int:
        """The index to ask changes after (0: read the job whole)."""
        kept = self._jobs.get((ns, job_id))
        return 0 if kept is None else kept.index

    def merge(self, ns: str, job_id: str, snap: state_pb2.JobSnapshot,
              ) -> list[allocation_pb2.Allocation] | None:
        """The job's allocations in create order: ``snap``'s delta over what
        is kept, when the merge matches the answer's ``alloc_set``; None when
        the job must be read whole (nothing kept, an incomplete delta, an
        answer without ``alloc_set``, or a merge that does not match)."""
        kept = self._jobs.get((ns, job_id))
        if kept is None or not snap.allocations_complete or not snap.HasField("alloc_set"):
            self.misses += 1
            return None
        merged = dict(kept.allocs)
        merged.update((a.id, a) for a in snap.allocations)
        newest = max((a.create_index for a in merged.values()), default=0)
        if (len(merged) != snap.alloc_set.count
                or newest != snap.alloc_set.max_create_index):
            self.misses += 1
            return None
        self.hits += 1
        return sorted(merged.values(), key=lambda a: a.create_index)

    def keep(self, ns: str, job_id: str, index: int,
             allocs: Iterable[allocation_pb2.Allocation]) -> None:
        """Keep the job's whole set of allocations as of ``index``."""
        key = (ns, job_id)
        self._jobs[key] = Kept(index, {a.id: a for a in allocs})
        self._jobs.move_to_end(key)
        while len(self._jobs) > self._max:
            self._jobs.popitem(last=False)

    def forget(self, ns: str, job_id: str) -> None:
        self._jobs.pop((ns, job_id), None)

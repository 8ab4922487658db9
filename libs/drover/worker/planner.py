"""The placement core of the reference worker (pure: no asyncio, no gRPC).

:func:`compute_plan` turns one :class:`~.plan.Snapshot` -- the job, its
versions, its latest deployment, its allocations, the nodes and what every
node already reserves -- into a :class:`~.plan.Plan`: placements, stops and
in-place updates. A stopped job stops everything, and so does a removed
task group; each group of a service or batch job is reconciled the way
Nomad's generic scheduler does it (:mod:`.generic`), each group of a system
job gets one allocation per eligible node (:mod:`.system`). Both build the
plan through one :class:`~.builder.PlanBuilder`.

Placement is bin-packing in Nomad's manner (:mod:`.packer`): the candidate
nodes (ready, eligible, not draining, in the job's datacenters) are
shuffled, up to ``max(2, ceil(log2 n))`` feasible ones are scored (best
fit: fuller is better, less a penalty for co-locating the same task group)
and the best wins. What does not fit anywhere is reported in ``queued``:
the worker then creates a blocked evaluation. A plan never holds more than
``max_ops`` writes (its allocations and a usage record per node it touches;
:mod:`.plan_size`); the remainder sets ``more``: the worker plans it next.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from drover.api.types.v1 import allocation_pb2, job_pb2

from .builder import PlanBuilder
from .generic import reconcile_group, same_tasks
from .plan import Plan, Snapshot
from .plan_size import DEFAULT_PLAN_OBJECTS
from .system import reconcile_system

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN


def compute_plan(snap: Snapshot, *, rng: random.Random | None = None,
                 new_id: Callable[[], str] | None = None,
                 max_ops: int = DEFAULT_PLAN_OBJECTS) -> Plan:
    """The plan that moves the job's allocations towards its spec."""
    rng = rng or random.Random(0)
    if new_id is None:
        counter = iter(range(1 << 62))
        new_id = lambda: f"alloc-{next(counter)}"  # noqa: E731 (tests pass their own)
    b = PlanBuilder(snap, rng, new_id, max_ops)
    job = snap.job
    by_group: dict[str, list[allocation_pb2.Allocation]] = {}
    for a in snap.allocs:
        by_group.setdefault(a.task_group, []).append(a)
    if job is None or job.stop:
        for allocs in by_group.values():
            for a in allocs:
                if a.desired_status == RUN:
                    b.stop(a, "alloc not needed since job is stopped")
        return b.plan
    groups = {tg.name for tg in job.task_groups}
    for name, allocs in sorted(by_group.items()):
        if name not in groups:
            for a in allocs:
                if a.desired_status == RUN:
                    b.stop(a, "alloc not needed since its task group was removed")
    for tg in job.task_groups:
        if job.type == job_pb2.JOB_TYPE_SYSTEM:  # one per node: the system scheduler's module
            reconcile_system(b, job, tg, by_group.get(tg.name, []), partial(same_tasks, snap, tg))
            continue
        reconcile_group(b, job, tg, by_group.get(tg.name, []))
    return b.plan


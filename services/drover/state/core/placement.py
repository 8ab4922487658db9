"""SubmitPlan's planner (Nomad's plan applier) and unblocking.

One worker's plan for one job -- placements, stops and in-place updates --
in ONE txn: whole or not at all. Refused with PLAN_STALE when the state
the worker computed it from moved (the shell plans on a synced view):

- the job's modify index, the set of the job's allocations and the modify
  index of each allocation the plan updates must be what the worker read;
  the job, every updated allocation, every new allocation's absence and as
  many placed-on nodes (at their current index) as etcd's compare cap
  allows are compared in the txn itself; a conflict there is PLAN_STALE
  too (the plan is ``retry=False``: the worker plans again);
- every node placed on is ready, eligible, not draining, and has room for
  the placements on top of what its live allocations reserve (minus the
  ones this plan stops).

Capacity freed by a plan (stops) or by a node unblocks blocked
evaluations: stored as pending in the same txn (:func:`unblock`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, node_pb2
from drover.errors import InvalidArgument, NotFound
from drover.state.core import codec
from drover.state.core.job_status import spec_read
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.rules import PlanStale
from drover.state.core.view import View, found_all
from drover.worker.resources import Vec, is_live, used

_READY = node_pb2.NODE_STATUS_READY
_INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
_BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED


def node_schedulable(node: node_pb2.Node) -> bool:
    return (node.status == _READY and not node.drain
            and node.scheduling_eligibility != _INELIGIBLE)


def unblock(view: View, ctx: WriteContext, plan: PlanBuilder, room: int,
            skip: tuple[str, str] | None = None) -> int:
    """Store up to ``room`` blocked evaluations as pending (capacity grew),
    each compared; how many."""
    n = 0
    for nsid in view.ids(codec.EVALUATIONS, "status", "blocked"):
        if n >= room:
            break
        ns, _, eid = nsid.partition("/")
        found = view.get(codec.EVALUATIONS, ns, eid)
        if found is None:
            continue
        ev = found.obj
        if ev.status != _BLOCKED or (skip and (ev.namespace, ev.job_id) == skip):
            continue
        ev.status = evaluation_pb2.EVALUATION_STATUS_PENDING
        ev.status_description = "unblocked: capacity changed"
        ev.modify_time.CopyFrom(ctx.now)
        plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, found.mod)
        n += 1
    return n


def plan_submit(view: View, ctx: WriteContext, request: Any, ns: str,
                placements: Sequence[Any], updates: Sequence[Any],
                evs: Sequence[Any]) -> WritePlan:
    index = str(view.revision)

    def stale(msg: str, what: str) -> PlanStale:
        return PlanStale(msg + "; re-read and plan again", metadata={"what": what, "index": index})

    job_mod = view.mod(codec.JOBS, ns, request.job_id)
    # job_index 0: the worker found the job purged and stops what is left.
    if job_mod != request.job_index and not spec_read(view, ns, request.job_id,
                                                      request.job_index):
        if job_mod == 0:
            raise NotFound(f"job {request.job_id!r} not found in namespace {ns!r}")
        raise stale(f"job {request.job_id!r} is at index {job_mod}, "
                    f"the plan read {request.job_index}", "job")
    if job_mod == 0 and placements:
        raise InvalidArgument(f"job {request.job_id!r} is gone: a plan for it may only stop",
                              metadata={"field": "placements"})
    current: dict[str, int] = {}
    for nsid in view.ids(codec.ALLOCATIONS, "job_id", request.job_id):
        a_ns, _, a_id = nsid.partition("/")
        mod = view.mod(codec.ALLOCATIONS, a_ns, a_id) if a_ns == ns else 0
        if mod:
            current[a_id] = mod
    # The set must be the one read (an allocation added or removed by someone
    # else changes what the plan should be); a client's report on an
    # allocation the plan leaves alone does not (Nomad's applier ignores it).
    if set(current) != set(request.alloc_indexes):
        raise stale(f"the allocations of job {request.job_id!r} changed", "allocations")
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.compare_mod(codec.JOBS, ns, request.job_id, job_mod)
    stopping: dict[str, Vec] = {}
    for a in updates:
        mod = current.get(a.id, 0)
        old = view.get(codec.ALLOCATIONS, ns, a.id) if mod else None
        if old is None:
            raise InvalidArgument(f"update of allocation {a.id!r}, which is not an "
                                  f"allocation of job {request.job_id!r}",
                                  metadata={"field": "updates"})
        if mod != request.alloc_indexes[a.id]:
            raise stale(f"allocation {a.id!r} changed since it was read", "allocations")
        if is_live(old.obj) and not is_live(a):
            stopping[old.obj.node_id] = (stopping.get(old.obj.node_id, Vec())
                                         + Vec.of(old.obj.resources))
        a.create_time.CopyFrom(old.obj.create_time)
        a.modify_time.CopyFrom(ctx.now)
        plan.put(codec.ALLOCATIONS, ns, a.id, a, old.mod)
    node_mods = _check_nodes(view, request, placements, stopping, stale)
    for a in placements:
        if view.mod(codec.ALLOCATIONS, ns, a.id):
            raise InvalidArgument(f"placement {a.id!r} already exists",
                                  metadata={"field": "placements"})
        a.create_time.CopyFrom(ctx.now)
        a.modify_time.CopyFrom(ctx.now)
        plan.put(codec.ALLOCATIONS, ns, a.id, a, None)
    for ev in evs:
        plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, 0)
    # Within the compare cap: nodes first, then the new keys' absence.
    for node_id, mod in node_mods[:max(0, ctx.max_compares - 1 - len(plan.compares))]:
        plan.compare_mod(codec.NODES, codec.GLOBAL_NS, node_id, mod)
    for a in placements[:max(0, ctx.max_compares - 1 - len(plan.compares))]:
        plan.compare_mod(codec.ALLOCATIONS, ns, a.id, 0)
    unblocked = 0
    if stopping:
        # less one: the job's status and summary write (state.core.job_status.follow)
        room = min(ctx.max_objects - 1 - len(plan.ops), ctx.max_compares - 1 - len(plan.compares))
        unblocked = unblock(view, ctx, plan, room, skip=(ns, request.job_id))
    placed, updated = len(placements), len(updates)
    return plan.build(
        lambda rev: state_pb2.SubmitPlanResponse(index=rev, placed=placed, updated=updated,
                                                 unblocked=unblocked),
        retry=False, final_conflict=lambda: PlanStale(
            "the state the plan was computed from changed while it was written; "
            "re-read and plan again", metadata={"what": "txn"}))


def _check_nodes(view: View, request: Any, placements: Sequence[Any],
                 stopping: dict[str, Vec],
                 stale: Callable[[str, str], PlanStale]) -> list[tuple[str, int]]:
    """Nomad's per-node re-check; (node id, mod revision) of each node placed on."""
    want: dict[str, Vec] = {}
    for a in placements:
        want[a.node_id] = want.get(a.node_id, Vec()) + Vec.of(a.resources)
    out = []
    for node_id, ask in sorted(want.items()):
        found = view.get(codec.NODES, codec.GLOBAL_NS, node_id)
        if found is None:
            raise stale(f"node {node_id!r} is gone", "nodes")
        if node_id not in request.node_indexes:
            raise InvalidArgument(f"node_indexes lacks node {node_id!r} the plan places on",
                                  metadata={"field": "node_indexes"})
        # No equality with the index read: a heartbeat moves it. What matters
        # is checked here, on the current node (and compared in the txn).
        node = found.obj
        if not node_schedulable(node):
            raise stale(f"node {node_id!r} no longer takes allocations", "nodes")
        on_node = (f.obj for _, f in found_all(view, codec.ALLOCATIONS, "node_id", node_id))
        free = Vec.of(node.resources) - used(on_node) + stopping.get(node_id, Vec())
        if not ask.fits_in(free):
            raise stale(f"node {node_id!r} has no room for the placements "
                        f"(free cpu {free.cpu} MHz, memory {free.memory_mb} MB)", "capacity")
        out.append((node_id, found.mod))
    return out

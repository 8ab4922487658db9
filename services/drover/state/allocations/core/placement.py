"""SubmitPlan's planner (Nomad's plan applier) and unblocking.

One worker's plan for one job -- placements, stops and in-place updates --
in ONE txn, less the nodes that cannot take their part (Nomad's partial
commit). Refused whole with PLAN_STALE when the state the worker computed
it from moved:

- the job's modify index, the set of the job's allocations and the modify
  index of each allocation the plan updates must be what the worker read;
  the job, every updated allocation and (as far as etcd's compare cap
  allows) every new allocation's absence and the placed-on nodes are
  compared in the txn itself.

Per node (:mod:`drover.state.allocations.core.usage`): a node placed on must exist, be
ready, eligible, not draining, and have room for the placements on top of
what its live allocations reserve (the plan's own stops and updates
swapped in). A node that fails this is left out -- its placements and its
updates -- and named in the response's ``refused`` with Nomad's reason,
with ``refresh_index`` (the commit's revision) to re-read at; the other
nodes commit. Every node the txn touches has its usage record rewritten,
compared where it places: a plan for the same node committed meanwhile
through any replica fails the txn (the shell judges again on a synced
view: a partial outcome, never an overcommit).

The shell judges a plan on the replica's view as it is, without a sync
first (the txn's compares catch what moved). So a refusal, whole or of a
node, is only given on a fresh view: judged on one that was not synced, it
asks the shell to sync and judge again (:func:`~drover.state.core.view.refuse`),
as a worker that read through this replica must never be told its plan is
stale, or a node full, because the replica lagged what it read.

Capacity freed by a plan (stops) unblocks the blocked evaluations it fits,
stored as pending in the same txn (:mod:`drover.state.evaluations.core.unblock`); a
blocked evaluation written with the plan that missed an unblock is stored
pending at once.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.errors import InvalidArgument, NotFound
from drover.state.allocations.core import usage
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.view import Found, View, refuse
from drover.state.errors import PlanStale, Replan
from drover.state.evaluations.core.unblock import admit_blocked, changed_rooms, unblock_where
from drover.state.jobs.core.job_status import spec_read
from drover.worker.resources import Vec, is_live

_BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED


def same_set(view: View, ns: str, current: dict[str, int], last: str, request: Any) -> bool:
    """The job's allocations (``current``; ``last`` the newest) are the set
    the plan was read on. With ``job_allocs`` the set is named by its count
    and highest create index (an allocation created since is newer than
    everything read; one deleted since lowers the count), and
    ``alloc_indexes`` need only hold the allocations the plan updates;
    without it, ``alloc_indexes`` is the whole set."""
    if not request.HasField("job_allocs"):
        return set(current) == set(request.alloc_indexes)
    newest = view.get(codec.ALLOCATIONS, ns, last) if last else None
    return (len(current) == request.job_allocs.count
            and (newest.create if newest is not None else 0)
            == request.job_allocs.max_create_index)


def plan_submit(view: View, ctx: WriteContext, request: Any, ns: str,
                placements: Sequence[Any], updates: Sequence[Any],
                evs: Sequence[Any], delivery: tuple[bytes, int] | None = None) -> WritePlan:
    """The plan as one txn, less the nodes that cannot take their part
    (partial commit, :mod:`drover.state.allocations.core.usage`). ``delivery``: the
    election key and term of the broker leader that vouched for the plan's
    delivery, compared in the txn (a failover since refuses the plan)."""
    job_mod = _check_job(view, request, ns, placements)
    olds = _check_allocations(view, request, ns, updates)
    _check_placements(view, request, ns, placements)
    parts = usage.by_node(placements, ((olds[u.id].obj.node_id, u) for u in updates))
    refused = usage.judge(view, parts)
    if refused and not view.fresh:
        # A node the replica has not yet seen join, or free room, is no
        # reason to send the worker away: judge again on a synced view.
        raise Replan(PlanStale(f"{len(refused)} node(s) refused on a view not synced",
                               metadata={"what": "nodes", "index": str(view.revision)}))
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    if delivery is not None:
        plan.compare(delivery[0], "create", delivery[1])
    plan.compare_mod(codec.JOBS, ns, request.job_id, job_mod)
    kept = [p for node_id, p in sorted(parts.items()) if node_id not in refused]
    stopping = _put_allocations(ctx, plan, ns, kept, olds)
    _put_evaluations(view, ctx, plan, evs)
    for part in kept:
        usage.order(plan, view, part, request.eval_id)
    new = _compare_placed(view, ctx, plan, ns, kept)
    unblocked = 0
    if stopping:
        # less one: the job's status and summary write (state.core.job_status.follow)
        room = min(ctx.max_objects - 1 - len(plan.ops), ctx.max_compares - 1 - len(plan.compares))
        unblocked = unblock_where(view, ctx, plan, changed_rooms(view, stopping), room,
                                  skip=(ns, request.job_id))
    placed, updated = len(new), sum(len(p.updates) for p in kept)
    refusals = _refusals(parts, refused)
    last = _refresh_at(view, refused)
    wrote = bool(plan.ops)
    return plan.build(
        lambda rev: state_pb2.SubmitPlanResponse(
            index=rev, placed=placed, updated=updated, unblocked=unblocked, refused=refusals,
            refresh_index=(rev if wrote else (last or rev)) if refusals else 0),
        conflict="the nodes or the job the plan was judged on changed while it was written")


def _stale(view: View, msg: str, what: str) -> PlanStale:
    return PlanStale(msg + "; re-read and plan again",
                     metadata={"what": what, "index": str(view.revision)})


def _check_job(view: View, request: Any, ns: str, placements: Sequence[Any]) -> int:
    """The job's modify index, refusing a plan read on another version of
    it, and placements for a job that is gone."""
    job_mod = view.mod(codec.JOBS, ns, request.job_id)
    # job_index 0: the worker found the job purged and stops what is left.
    if job_mod != request.job_index and not spec_read(view, ns, request.job_id,
                                                      request.job_index):
        if job_mod == 0:
            refuse(view, NotFound(f"job {request.job_id!r} not found in namespace {ns!r}"))
        refuse(view, _stale(view, f"job {request.job_id!r} is at index {job_mod}, "
                                  f"the plan read {request.job_index}", "job"))
    if job_mod == 0 and placements:
        refuse(view, InvalidArgument(f"job {request.job_id!r} is gone: a plan for it may "
                                     "only stop", metadata={"field": "placements"}))
    return job_mod


def _check_allocations(view: View, request: Any, ns: str,
                       updates: Sequence[Any]) -> dict[str, Found]:
    """The job's allocations are the set the plan was read on, and each one
    it updates is as read: the updated allocations as stored, by id."""
    current: dict[str, int] = {}
    newest = ""
    for nsid in view.ids(codec.ALLOCATIONS, "job_id", request.job_id):
        a_ns, _, a_id = nsid.partition("/")
        mod = view.mod(codec.ALLOCATIONS, a_ns, a_id) if a_ns == ns else 0
        if mod:
            current[a_id] = mod
            newest = a_id
    # The set must be the one read (an allocation added or removed by someone
    # else changes what the plan should be); a client's report on an
    # allocation the plan leaves alone does not (Nomad's applier ignores it).
    if not same_set(view, ns, current, newest, request):
        refuse(view, _stale(view, f"the allocations of job {request.job_id!r} changed",
                            "allocations"))
    olds: dict[str, Found] = {}
    for a in updates:
        mod = current.get(a.id, 0)
        old = view.get(codec.ALLOCATIONS, ns, a.id) if mod else None
        if old is None:
            refuse(view, InvalidArgument(f"update of allocation {a.id!r}, which is not an "
                                         f"allocation of job {request.job_id!r}",
                                         metadata={"field": "updates"}))
        if mod != request.alloc_indexes.get(a.id, 0):
            refuse(view, _stale(view, f"allocation {a.id!r} changed since it was read",
                                "allocations"))
        olds[a.id] = old
    return olds


def _check_placements(view: View, request: Any, ns: str, placements: Sequence[Any]) -> None:
    """Every placement is new and its node's index was read."""
    for a in placements:
        if view.mod(codec.ALLOCATIONS, ns, a.id):
            refuse(view, InvalidArgument(f"placement {a.id!r} already exists",
                                         metadata={"field": "placements"}))
        if a.node_id not in request.node_indexes:
            raise InvalidArgument(f"node_indexes lacks node {a.node_id!r} the plan places on",
                                  metadata={"field": "node_indexes"})


def _put_allocations(ctx: WriteContext, plan: PlanBuilder, ns: str,
                     kept: Sequence[usage.NodePart], olds: dict[str, Found]) -> dict[str, Vec]:
    """Write the kept nodes' updates and placements; the room each node's
    stops free."""
    stopping: dict[str, Vec] = {}
    for part in kept:
        for a in part.updates:
            old = olds[a.id]
            if is_live(old.obj) and not is_live(a):
                freed = stopping.get(part.node_id, Vec())
                stopping[part.node_id] = freed + Vec.of(old.obj.resources)
            a.create_time.CopyFrom(old.obj.create_time)
            a.modify_time.CopyFrom(ctx.now)
            plan.put(codec.ALLOCATIONS, ns, a.id, a, old.mod)
        for a in part.placements:
            a.create_time.CopyFrom(ctx.now)
            a.modify_time.CopyFrom(ctx.now)
            plan.put(codec.ALLOCATIONS, ns, a.id, a, None)
    return stopping


def _put_evaluations(view: View, ctx: WriteContext, plan: PlanBuilder,
                     evs: Sequence[Any]) -> None:
    """Write the plan's evaluations (a blocked one that missed an unblock: pending)."""
    for ev in evs:  # the call's own copies: set idempotently on each attempt
        if not ev.HasField("create_time"):
            ev.create_time.CopyFrom(ctx.now)
        ev.modify_time.CopyFrom(ctx.now)
        admit_blocked(view, ev)
        plan.put(codec.EVALUATIONS, ev.namespace, ev.id, ev, 0)


def _compare_placed(view: View, ctx: WriteContext, plan: PlanBuilder, ns: str,
                    kept: Sequence[usage.NodePart]) -> list[Any]:
    """Refuse a plan whose compares do not fit one txn; within the cap,
    compare the nodes placed on and the new allocations' absence. The
    placements written."""
    if len(plan.compares) > ctx.max_compares - 1:  # the fence's
        raise InvalidArgument(f"the plan needs {len(plan.compares)} compares; at most "
                              f"{ctx.max_compares - 1} fit one txn: send a smaller plan",
                              metadata={"field": "placements"})
    # Within the compare cap, informational: nodes placed on (their status and
    # room were judged on the synced view; the usage record orders the room),
    # then the new keys' absence.
    placed_nodes = [p.node_id for p in kept if p.placements]
    for node_id in placed_nodes[:max(0, ctx.max_compares - 1 - len(plan.compares))]:
        plan.compare_mod(codec.NODES, codec.GLOBAL_NS, node_id,
                         view.mod(codec.NODES, codec.GLOBAL_NS, node_id))
    new = [a for p in kept for a in p.placements]
    for a in new[:max(0, ctx.max_compares - 1 - len(plan.compares))]:
        plan.compare_mod(codec.ALLOCATIONS, ns, a.id, 0)
    return new


def _refusals(parts: dict[str, usage.NodePart],
              refused: dict[str, str]) -> list[state_pb2.RefusedNode]:
    """Each refused node with its reason and the plan's parts on it."""
    return [state_pb2.RefusedNode(node_id=node_id, reason=why,
                                  placement_ids=[a.id for a in parts[node_id].placements],
                                  update_ids=[a.id for a in parts[node_id].updates])
            for node_id, why in sorted(refused.items())]


def _refresh_at(view: View, refused: dict[str, str]) -> int:
    """Nothing written: refresh at the last change to a refused node (the
    plan that took its room wrote its allocations then), as Nomad refreshes
    at the allocations' and nodes' index rather than at an unrelated write."""
    return max((max(view.mod(codec.NODES, codec.GLOBAL_NS, n),
                    view.mod(codec.NODE_USAGE, codec.GLOBAL_NS, n)) for n in refused), default=0)


def nothing_committed(placements: Sequence[Any], updates: Sequence[Any], index: int,
                      reason: str = usage.NODE_CHANGED) -> Any:
    """The answer when every attempt's txn lost its race: no node committed,
    each named with ``reason``, to be refreshed at ``index``."""
    parts = usage.by_node(placements, ((u.node_id, u) for u in updates))
    return state_pb2.SubmitPlanResponse(index=index, refresh_index=index,
                                        refused=_refusals(parts, dict.fromkeys(parts, reason)))

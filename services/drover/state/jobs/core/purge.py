"""Purge stops first (pure): what stands in a purge's way, and the stop
that clears it.

Nomad never deletes an allocation its node still runs: a purge deregisters
(stops) the job, and the allocations go once their clients report them
stopped. drover's DeregisterJob with ``purge``:

- when every allocation of the job is client-terminal (complete, failed,
  lost) or on a node that is down or gone (it will never report), the job
  and all it owns are removed at once (:mod:`drover.state.reaper`);
- otherwise the job is stopped as a plain DeregisterJob stops it (a new
  version, its deployment cancelled, a ``job-deregister`` evaluation the
  worker turns into stops) and marked ``purge_requested``; it is removed by
  the next purge call or the GC pass that finds nothing blocking
  (:func:`blockers` empty), whichever comes first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.reap import JOB_OWNED
from drover.state.core.view import View, found_all
from drover.state.jobs.core.register import plan_deregister

_CLIENT_TERMINAL = frozenset({allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
                              allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
                              allocation_pb2.ALLOC_CLIENT_STATUS_LOST})


def blockers(view: View, ns: str, job_id: str) -> Iterator[Any]:
    """The job's allocations a node may still run: not client-terminal, on
    a node that is not down (an absent node counts as down)."""
    for _, f in found_all(view, codec.ALLOCATIONS, "job_id", job_id, ns):
        a = f.obj
        if a.client_status in _CLIENT_TERMINAL:
            continue
        node = view.get(codec.NODES, codec.GLOBAL_NS, a.node_id) if a.node_id else None
        if node is None or node.obj.status == node_pb2.NODE_STATUS_DOWN:
            continue
        yield a


def owned_counts(view: View, ns: str, job_id: str) -> dict[str, int]:
    """What a purge of the job will remove, per kind."""
    counts = {}
    for kind in JOB_OWNED:
        field = "job" if kind == codec.JOB_VERSIONS else "job_id"
        value = f"{ns}/{job_id}" if kind == codec.JOB_VERSIONS else job_id
        counts[kind] = sum(1 for _ in found_all(view, kind, field, value, ns))
    return counts


def plan_stop_for_purge(view: View, ctx: WriteContext, ns: str, job_id: str) -> WritePlan:
    """The stop of a purge that has to wait (module doc): the job stopped
    (unless it already is) and marked ``purge_requested``; the answer says
    what was asked to stop and what will be removed."""
    found = view.get(codec.JOBS, ns, job_id)
    running = sum(1 for _ in blockers(view, ns, job_id))
    counts = owned_counts(view, ns, job_id)
    respond_stop = None
    if found is not None and not found.obj.stop:
        stop = plan_deregister(view, ctx, ns, job_id, purge_requested=True)
        respond_stop = stop.respond
        plan = PlanBuilder(ctx.keys, ctx.on_put, list(stop.compares), list(stop.ops),
                           list(stop.events))
    else:
        plan = PlanBuilder(ctx.keys, ctx.on_put)
        if found is not None and not found.obj.purge_requested:
            found.obj.purge_requested = True
            plan.put(codec.JOBS, ns, job_id, found.obj, found.mod)
    stopped = respond_stop is not None

    def respond(rev: int) -> state_pb2.DeregisterJobResponse:
        out = state_pb2.DeregisterJobResponse(
            index=rev, purge_pending=True, stopped_allocations=running if stopped else 0,
            pending_versions=counts[codec.JOB_VERSIONS] + (1 if stopped else 0),
            pending_deployments=counts[codec.DEPLOYMENTS],
            pending_evaluations=counts[codec.EVALUATIONS] + (1 if stopped else 0),
            pending_allocations=counts[codec.ALLOCATIONS])
        if respond_stop is not None:
            r = respond_stop(rev)
            out.eval_id, out.job_modify_index = r.eval_id, r.job_modify_index
        return out
    return plan.build(respond, conflict=f"job {job_id!r} changed concurrently; retry")

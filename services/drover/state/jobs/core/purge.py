"""Purge stops first (pure): what stands in a purge's way, and the stop
that clears it.

Nomad's ``job stop -purge`` deletes the job (and its versions) at once,
in the txn that writes the ``job-deregister`` evaluation
(``Job.Deregister`` → ``DeleteJob``); the scheduler, finding no job, stops
its allocations, and Nomad never deletes an allocation its node still
runs. drover's DeregisterJob with ``purge``:

- when every allocation of the job is client-terminal (complete, failed,
  lost) or on a node that is down or gone (it will never report), the job
  and all it owns are removed at once (:mod:`drover.state.reaper`);
- otherwise (:func:`plan_stop_for_purge`) the job and its versions are
  deleted, its active deployment cancelled and a ``job-deregister``
  evaluation written, in one txn: the worker stops what runs (a plan for a
  gone job may only stop), and the allocations, evaluations and
  deployments left go by garbage collection once terminal. (Was: the job
  stayed listed, stopped, until its allocations had stopped.)

A job stored with ``purge_requested`` (by the earlier rule) is still
removed by the next purge call or the GC pass that finds nothing blocking.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.errors import NotFound
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.reap import JOB_OWNED, job_owned
from drover.state.core.view import View, found_all
from drover.state.jobs.core.register import STOPPED_DESCRIPTION, cancel_active, new_eval

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
    """The purge of a job whose allocations still run (module doc): the job
    and its versions deleted (each compared), its active deployment
    cancelled and a ``job-deregister`` evaluation, in one txn; the answer
    says what was asked to stop and what garbage collection will remove."""
    found = view.get(codec.JOBS, ns, job_id)
    if found is None:
        raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
    job = found.obj
    running = sum(1 for _ in blockers(view, ns, job_id))
    counts = owned_counts(view, ns, job_id)
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    ev = new_eval(ctx, job, "job-deregister")
    plan.put(codec.EVALUATIONS, ns, ev.id, ev, None)
    cancel_active(view, ctx, plan, job, description=STOPPED_DESCRIPTION)
    versions = [d for d in job_owned(view, ns, job_id) if d.kind == codec.JOB_VERSIONS]
    for d in versions:
        plan.delete(d.kind, ns, d.nsid.partition("/")[2], d.mod)
    plan.delete(codec.JOBS, ns, job_id, found.mod)

    def respond(rev: int) -> state_pb2.DeregisterJobResponse:
        return state_pb2.DeregisterJobResponse(
            eval_id=ev.id, job_modify_index=rev, index=rev, purge_txns=1,
            purged_versions=len(versions), stopped_allocations=running,
            pending_deployments=counts[codec.DEPLOYMENTS],
            pending_evaluations=counts[codec.EVALUATIONS] + 1,
            pending_allocations=counts[codec.ALLOCATIONS])
    return plan.build(respond, conflict=f"job {job_id!r} changed concurrently; retry")

"""PlanJob (``nomad job plan``): a dry run of RegisterJob (pure; writes nothing).

The job as RegisterJob would store it (the next version, or the running
one for an unchanged spec), the deployment it would start, the job's
allocations, every node and what each reserves are handed to the worker's
own planner (:func:`drover.worker.planner.compute_plan`), so the plan
shows what the first evaluation of a ``job run`` then does:

- per task group, Nomad's DesiredUpdates: ``place`` (create), ``stop``
  (destroy), ``in_place_update``, ``destructive_update`` (create/destroy
  update: a stop and its replacement count once), ``canary``, ``ignore``
  (live allocations left as they are);
- placements that fit no node, with why (no eligible node in the job's
  datacenters, or which resource is exhausted on how many nodes);
- the field diff against the running version (:mod:`drover.jobspec.diff`)
  and the job's ``job_modify_index`` for ``job run --check-index``.

A destructive update is rolled ``max_parallel`` at a time, so the plan
counts only the first batch, as Nomad's does; the rest is ``ignore``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2, node_pb2
from drover.jobspec import diff as spec_diff
from drover.scheduling.eligibility import schedulable
from drover.state.core import codec
from drover.state.core.plan import WriteContext
from drover.state.core.rules import next_version
from drover.state.core.view import View, found_all
from drover.state.jobs.core.register import new_deployment, spec_unchanged
from drover.worker.plan import Plan, Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import Vec, group_ask, is_live

_STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
#: Enough for any job: a dry run is not one txn.
_NO_CAP = 1 << 30


def plan_job(view: View, ctx: WriteContext, job: job_pb2.Job) -> state_pb2.PlanJobResponse:
    """The dry run of registering ``job`` (validated) on ``view`` (module doc)."""
    ns = job.namespace
    found = view.get(codec.JOBS, ns, job.id)
    current = found.obj if found is not None else None
    resp = state_pb2.PlanJobResponse(index=view.revision,
                                     job_modify_index=current.job_modify_index if current else 0)
    if current is not None and spec_unchanged(current, job):
        candidate, resp.diff_type = current, "None"
        resp.warnings.append("job spec is unchanged: a run keeps the version and "
                             "starts no deployment")
    else:
        candidate = job_pb2.Job()
        candidate.CopyFrom(job)
        candidate.version = next_version(current)
        candidate.stop = False
        resp.diff_type = spec_diff.diff_type(current if current and not current.stop else None,
                                             candidate)
        for d in spec_diff.diff(current, candidate):
            resp.diff.add(type=d.type, path=d.path, old=d.old, new=d.new)
    resp.version = candidate.version
    deployment: deployment_pb2.Deployment | None
    if candidate is not current:
        deployment = new_deployment(ctx, candidate, current.create_index if current else 0,
                                    first=current is None or current.stop)
    else:
        deployment = _latest_deployment(view, ns, job.id)
    allocs = [f.obj for _, f in found_all(view, codec.ALLOCATIONS, "job_id", job.id, ns)]
    versions = {v.version: v for v in _versions(view, ns, job.id)}
    versions[candidate.version] = candidate
    nodes = _nodes(view)
    snap = Snapshot(namespace=ns, job_id=job.id, job=candidate, versions=versions,
                    deployment=deployment, allocs=allocs, nodes=nodes,
                    node_used=_node_used(view, nodes))
    plan = compute_plan(snap, rng=random.Random(0), max_ops=_NO_CAP)
    _annotate(resp, candidate, allocs, plan)
    for group, count in plan.queued.items():
        tg = next(g for g in candidate.task_groups if g.name == group)
        failed = resp.failed_placements[group]
        failed.count = count
        failed.reasons.extend(_why(candidate, tg, nodes, snap.node_used))
    return resp


def _annotate(resp: state_pb2.PlanJobResponse, job: job_pb2.Job,
              allocs: list[allocation_pb2.Allocation], plan: Plan) -> None:
    for tg in job.task_groups:
        resp.desired_updates[tg.name]
    replaced = {a.previous_allocation for a in plan.placements
                if a.previous_allocation}
    touched = set(replaced)
    for a in plan.placements:
        u = resp.desired_updates[a.task_group]
        if a.deployment_status.canary:
            u.canary += 1
        elif a.previous_allocation:
            u.destructive_update += 1
        else:
            u.place += 1
    final = {a.id: a for a in plan.updates}  # an update then a stop: the stop counts
    for a in final.values():
        touched.add(a.id)
        if a.id in replaced:
            continue  # counted with its replacement
        u = resp.desired_updates[a.task_group]
        if a.desired_status == _STOP:
            u.stop += 1
        else:
            u.in_place_update += 1
    for a in allocs:
        if a.id not in touched and is_live(a) and a.task_group in resp.desired_updates:
            resp.desired_updates[a.task_group].ignore += 1


def _why(job: job_pb2.Job, tg: job_pb2.TaskGroup, nodes: list[node_pb2.Node],
         used: Mapping[str, Vec]) -> list[str]:
    """Nomad's placement failure metrics, in words."""
    dcs = set(job.datacenters)
    eligible = [n for n in nodes if schedulable(n)
                and ("*" in dcs or not dcs or n.datacenter in dcs)]
    if not eligible:
        return [f"no eligible node in datacenters {sorted(dcs)} (ready, eligible, not draining)"]
    ask = group_ask(tg)
    cpu = mem = 0
    for n in eligible:
        free = Vec.of(n.resources) - used.get(n.id, Vec())
        cpu += ask.cpu > free.cpu
        mem += ask.memory_mb > free.memory_mb
    out = []
    if cpu:
        out.append(f'Dimension "cpu" exhausted on {cpu} nodes')
    if mem:
        out.append(f'Dimension "memory" exhausted on {mem} nodes')
    return out or [f"no room on the {len(eligible)} eligible nodes"]


def _versions(view: View, ns: str, job_id: str) -> list[job_pb2.Job]:
    return [f.obj for _, f in found_all(view, codec.JOB_VERSIONS, "job", f"{ns}/{job_id}")]


def _latest_deployment(view: View, ns: str, job_id: str) -> deployment_pb2.Deployment | None:
    latest: deployment_pb2.Deployment | None = None
    for _, f in found_all(view, codec.DEPLOYMENTS, "job_id", job_id, ns):
        if latest is None or f.obj.create_index > latest.create_index:
            latest = f.obj
    return latest


def _nodes(view: View) -> list[node_pb2.Node]:
    out = []
    for nsid in view.ids(codec.NODES, None, None):
        n_ns, _, nid = nsid.partition("/")
        f = view.get(codec.NODES, n_ns, nid)
        if f is not None:
            out.append(f.obj)
    return out


def _node_used(view: View, nodes: list[node_pb2.Node]) -> dict[str, Vec]:
    used: dict[str, Vec] = {}
    for n in nodes:
        total = Vec()
        for _, f in found_all(view, codec.ALLOCATIONS, "node_id", n.id):
            if is_live(f.obj):
                total += Vec.of(f.obj.resources)
        used[n.id] = total
    return used


"""System jobs: one allocation of each task group per eligible node (pure).

Nomad's system scheduler, as the reference worker plans it
(:func:`drover.worker.planner.compute_plan` hands a system job here):

- the target nodes are the planner's candidates: ready, eligible, not
  draining, in the job's datacenters; each gets one allocation per group,
  placed on that node if it has room (else the group is ``queued`` there,
  and the evaluation blocks until capacity changes);
- an allocation on a node that left the job's datacenters, or is gone, is
  stopped; on a node that is ineligible or draining it is left alone (a
  drain decides about it: the drainer marks it to migrate, last, and it is
  stopped with no replacement), unless the job changed: then it is stopped;
  on a down node it is lost already (the state service marks it);
- an allocation marked to migrate on a target node (``alloc stop``: Nomad's
  ``Alloc.Stop`` marks ``DesiredTransition.Migrate``) is stopped ("alloc is
  being migrated") and replaced on the same node in the same plan, linked
  both ways (``previous_allocation`` / ``next_allocation``, as Nomad's
  system scheduler chains a placement to the node's terminal allocation of
  that name); with no room left in this plan it waits for the follow-up;
- an allocation of an older version is updated in place when its tasks are
  unchanged, else replaced on the same node, ``max_parallel`` nodes per
  evaluation (the plan asks for a follow-up evaluation for the rest);
- a second allocation of a group on one node is stopped.

New nodes get their allocations through the evaluations the state service
creates for system jobs when a node becomes schedulable.
"""

from __future__ import annotations

from collections.abc import Callable

from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2

from . import migrate
from .builder import PlanBuilder
from .resources import is_live

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED


def reconcile_system(b: PlanBuilder, job: job_pb2.Job, tg: job_pb2.TaskGroup,
                     allocs: list[allocation_pb2.Allocation],
                     same_tasks: Callable[[allocation_pb2.Allocation], bool]) -> None:
    """Plan ``tg`` of system ``job`` (module doc); ``same_tasks(a)``: the
    allocation's tasks are the group's (an in-place update)."""
    nodes = {n.id: n for n in b.snap.nodes}
    targets = {n.id: n for n in b.packer.nodes}
    dcs = set(job.datacenters)
    budget = tg.update.max_parallel if tg.update.max_parallel > 0 else len(targets) or 1
    covered: set[str] = set()
    for a in sorted(allocs, key=lambda a: (a.node_id, -a.job_version, a.id)):
        if a.desired_status != RUN or not is_live(a):
            if (a.desired_status == RUN and a.client_status == FAILED
                    and a.job_version == job.version):
                covered.add(a.node_id)  # failed on this version: not replaced here
            continue
        node = nodes.get(a.node_id)
        if node is None or ("*" not in dcs and node.datacenter not in dcs):
            b.stop(a, "alloc not needed as node is no longer in the job's datacenters")
            continue
        if a.node_id in covered:
            b.stop(a, "alloc not needed: the node already runs one of the group")
            continue
        covered.add(a.node_id)
        if a.node_id not in targets:
            if migrate.marked(a):  # the drainer's word: it leaves (last)
                b.stop(a, migrate.WHY)
            elif a.job_version != job.version:
                b.stop(a, "alloc not needed as node is not eligible and the job changed")
            continue  # ineligible or draining: left to the drain
        if migrate.marked(a):
            _replace(b, job, tg, a, targets[a.node_id])
            continue
        if a.job_version == job.version:
            continue
        if same_tasks(a):
            b.in_place(a, job, "")
            continue
        if budget <= 0:
            b.plan.more = True
            continue
        budget -= 1
        if not b.stop(a, "alloc is being updated due to job update"):
            continue  # no room left in this plan (it says more): a follow-up replaces it
        if not b.place_on(job, tg, targets[a.node_id], previous=a.id):
            b.undo_stop(a)  # no room for the new one: the old one keeps running, and its room
    for node_id, node in sorted(targets.items()):
        if node_id not in covered:
            b.place_on(job, tg, node)


def _replace(b: PlanBuilder, job: job_pb2.Job, tg: job_pb2.TaskGroup,
             a: allocation_pb2.Allocation, node: node_pb2.Node) -> None:
    """Stop ``a`` (marked to migrate) and place its replacement on its node."""
    if not b.room_for(2):
        return  # the plan says more: a follow-up evaluation replaces it
    b.stop(a, migrate.WHY)
    if b.place_on(job, tg, node, previous=a.id):
        b.link_last()

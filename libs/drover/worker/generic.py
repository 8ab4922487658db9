"""Service and batch jobs: one task group reconciled towards its spec (pure).

Nomad's generic scheduler, as the reference worker plans it
(:func:`drover.worker.planner.compute_plan` hands each group of a service
or batch job here):

- allocations marked to migrate (the node drainer's mark, or ``alloc
  stop``) are stopped and replaced, a drained batch one only stopped
  (:mod:`.migrate`); the others on a draining node stay;
- a running allocation stays, unhealthy or not, even when the deployment
  watcher marked it to reschedule (Nomad's ``filterByRescheduleable`` /
  ``shouldFilter`` keep a running allocation untainted): the progress
  deadline decides its deployment;
- a rescheduled allocation's replacement avoids the nodes it and its
  predecessors failed on (:mod:`.penalty`);
- lost allocations (their node went down) are stopped and replaced at
  once; failed ones of an older version are stopped and replaced; failed
  ones of the current version are rescheduled by their group's reschedule
  policy (:mod:`.failed`: now, by a follow-up evaluation due later, or not
  at all once the policy is spent);
- a failed or cancelled deployment's un-promoted canaries are stopped;
- an old allocation whose tasks are unchanged in the new version is updated
  in place (same node, new version); the others need a destructive update:
  stop and place a replacement;
- with a running deployment that asks for canaries (never on a job's first
  version: the state service asks for none then) only canaries are placed
  until the group is promoted (with nothing old left to serve, the missing
  allocations too, the canaries among them); then old allocations are replaced at most
  ``max_parallel`` at a time, less the ones of this deployment not yet
  healthy; a paused, failed or cancelled deployment replaces nothing;
- missing allocations (count raised, lost, first placement) are placed at
  once, excess ones stopped at once;
- a batch job's completed allocations count as done, and its running ones
  of an older version finish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2

from . import failed as failed_allocs
from . import migrate, reschedule
from . import penalty as node_penalty
from .builder import PlanBuilder, name_index
from .node_set import node_set
from .plan import Snapshot
from .resources import is_live

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
LOST = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
DEP_RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
DEP_FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED
DEP_CANCELLED = deployment_pb2.DEPLOYMENT_STATUS_CANCELLED

Alloc = allocation_pb2.Allocation


def same_tasks(snap: Snapshot, tg: job_pb2.TaskGroup, a: Alloc) -> bool:
    """``a``'s version of ``tg`` runs the same tasks (an in-place update)."""
    return tasks_equal(group_named(snap.versions.get(a.job_version), tg.name), tg)


def tasks_equal(a: job_pb2.TaskGroup | None, b: job_pb2.TaskGroup) -> bool:
    if a is None:
        return False
    return list(a.tasks) == list(b.tasks) and dict(a.meta) == dict(b.meta)


def group_named(job: job_pb2.Job | None, name: str) -> job_pb2.TaskGroup | None:
    if job is None:
        return None
    return next((tg for tg in job.task_groups if tg.name == name), None)


def canary_names(n: int, count: int, destructive: Sequence[Alloc], current: Sequence[Alloc],
                 next_name: Callable[[], int]) -> list[int]:
    """The indexes of ``n`` new canaries (Nomad's ``NextCanaries``): first
    those of allocations being replaced (destructive updates, below
    ``count``) that no canary holds yet, lowest first; then free ones."""
    held = {name_index(a.name) for a in current if a.deployment_status.canary}
    out = sorted({i for i in (name_index(a.name) for a in destructive)
                  if 0 <= i < count and i not in held})[:n]
    while len(out) < n:
        out.append(next_name())
    return out


class Names:
    """A group's free allocation indexes, lowest first (names are only ever
    taken, so none is ever free below the last one handed out)."""

    def __init__(self, used: set[int]) -> None:
        self.used, self.lowest = used, 0

    def next(self) -> int:
        i = self.lowest
        while i in self.used:
            i += 1
        self.used.add(i)
        self.lowest = i + 1
        return i

    def freed_or_next(self, freed: list[int]) -> int:
        """The index of an allocation this plan stopped (its replacement
        takes its name), else the lowest free one; taken either way, so no
        later :meth:`next` hands it out again."""
        if not freed:
            return self.next()
        i = freed.pop()
        self.used.add(i)
        return i


@dataclass
class Group:
    """One task group being reconciled: its deployment, and its allocations
    sorted by what becomes of them."""

    job: job_pb2.Job
    tg: job_pb2.TaskGroup
    #: The job version's deployment, if any; its id when it runs and has the group.
    dep: deployment_pb2.Deployment | None
    dep_id: str
    dep_running: bool
    #: The deployment's state of the group.
    dstate: deployment_pb2.DeploymentGroupState | None
    batch: bool
    current: list[Alloc] = field(default_factory=list)  # new version, occupying a slot
    old: list[Alloc] = field(default_factory=list)      # older version, live
    free_names: list[int] = field(default_factory=list)  # indexes freed by stops
    migrating: list[Alloc] = field(default_factory=list)  # marked by the node drainer
    later: list[tuple[float, Alloc]] = field(default_factory=list)  # reschedules due later
    #: Old allocations that need a stop and a replacement.
    destructive: list[Alloc] = field(default_factory=list)
    #: Slots the migrations fill (their replacements).
    held: int = 0
    #: Ids of the allocations this plan updates in place.
    updated: set[str] = field(default_factory=set)


def reconcile_group(b: PlanBuilder, job: job_pb2.Job, tg: job_pb2.TaskGroup,
                    allocs: list[Alloc]) -> None:
    """Plan ``tg`` of service or batch ``job`` (module doc)."""
    g = _group(b.snap, job, tg)
    _sort(b, g, allocs)
    _reschedule_later(b, g)
    _cancel_canaries(b, g)
    moved = migrate.migrate(b, job, tg, g.migrating, g.dep_id,
                            {a.id: name_index(a.name) for a in g.migrating})
    for a in moved.kept:
        (g.current if a.job_version == job.version else g.old).append(a)
    g.held = moved.held
    _update_in_place(b, g)
    names = Names({name_index(a.name) for a in g.current} | {name_index(a.name) for a in g.old}
                  | {name_index(a.name) for a in g.migrating})
    dstate = g.dstate
    want_canaries = dstate.desired_canaries if dstate is not None and g.dep_running else 0
    if want_canaries and dstate is not None and not dstate.promoted:
        _place_canaries(b, g, want_canaries, names)
        return
    if not _count(b, g, names):
        return
    if g.dep is not None and not g.dep_running:
        return  # paused, failed or cancelled: no destructive updates
    _replace(b, g)


def _group(snap: Snapshot, job: job_pb2.Job, tg: job_pb2.TaskGroup) -> Group:
    dep = snap.deployment if (snap.deployment is not None
                              and snap.deployment.job_version == job.version) else None
    running = dep is not None and dep.status == DEP_RUNNING
    dep_id = dep.id if running and dep is not None and tg.name in dep.task_groups else ""
    dstate = dep.task_groups.get(tg.name) if dep is not None else None
    return Group(job, tg, dep, dep_id, running, dstate, job.type == job_pb2.JOB_TYPE_BATCH)


def _sort(b: PlanBuilder, g: Group, allocs: list[Alloc]) -> None:
    """Each running allocation sorted into ``g`` (lost and outdated failed
    ones stopped, failed ones of this version judged by the policy)."""
    job = g.job
    nodes = node_set(b.snap.nodes)
    for a in allocs:
        if a.desired_status != RUN:
            if g.batch and a.job_version == job.version and not migrate.replaced(a):
                g.current.append(a)  # drained (Nomad's filters): its slot stays counted
            continue
        if a.client_status == LOST or (is_live(a) and nodes.lost_on(a.node_id)):
            if b.stop(a, "alloc is lost since its node is down", LOST):
                g.free_names.append(name_index(a.name))
            continue
        if a.client_status == COMPLETE:
            if g.batch and a.job_version == job.version:
                g.current.append(a)  # done: counts towards the group
            continue
        if a.client_status == FAILED:
            if a.job_version == job.version:
                g.current.append(a)  # holds its slot: replaced (now) or not (failed module)
                _failed(b, g, a)
            elif b.stop(a, "alloc failed; replaced by the new version"):
                g.free_names.append(name_index(a.name))
            continue
        if migrate.marked(a):
            g.migrating.append(a)
            continue
        (g.current if a.job_version == job.version else g.old).append(a)


def _failed(b: PlanBuilder, g: Group, a: Alloc) -> None:
    """A failed allocation of the current version (:mod:`.failed`): replaced
    now, noted for a follow-up evaluation, or kept."""
    job, tg = g.job, g.tg
    policy = reschedule.resolve(job.type, tg.reschedule if tg.HasField("reschedule") else None)
    j = failed_allocs.judge(a, policy, b.snap.eval_id, b.snap.now, g.dep)
    if j.verdict is failed_allocs.Verdict.LATER:
        g.later.append((j.at, a))
    if j.verdict is not failed_allocs.Verdict.NOW:
        return
    if b.ops() + 2 > b.max_ops:
        b.plan.more = True
        return
    if not b.stop(a, failed_allocs.STOP_DESCRIPTION):
        return
    if not b.place(job, tg, name_index(a.name), g.dep_id, previous=a.id,
                   avoid=node_penalty.penalty_nodes(a)):
        b.plan.updates.pop()  # nowhere to go: it stays failed (queued: blocked evaluation)
        return
    new = b.plan.placements[-1]
    new.reschedule_tracker.CopyFrom(failed_allocs.replacement_tracker(policy, a, b.snap.now))
    b.link_last()


def _reschedule_later(b: PlanBuilder, g: Group) -> None:
    """The follow-up evaluations for reschedules due later, with the plan."""
    if not g.later:
        return
    evals, marked = failed_allocs.later_evals(g.job, b.snap.eval_id, g.later, b.new_id)
    if b.ops() + len(marked) <= b.max_ops:
        b.plan.updates.extend(marked)
        b.plan.evaluations.extend(evals)
    else:
        b.plan.more = True


def _cancel_canaries(b: PlanBuilder, g: Group) -> None:
    """Nomad's cancelUnneededCanaries: a failed or cancelled deployment's
    un-promoted canaries go."""
    dep, dstate = g.dep, g.dstate
    if dep is None or dep.status not in (DEP_FAILED, DEP_CANCELLED) or (
            dstate is not None and dstate.promoted):
        return
    for a in [a for a in g.current if a.deployment_status.canary
              and a.deployment_id == dep.id and a.client_status != FAILED]:
        if b.stop(a, "alloc not needed due to job update"):
            g.current.remove(a)


def _update_in_place(b: PlanBuilder, g: Group) -> None:
    """Old allocations whose tasks are unchanged are updated in place; the
    others are left for destructive updates (none for a batch job: a
    running batch allocation of an old version finishes)."""
    # Compared once per version, not per allocation (a job's old allocations
    # share a version or a few).
    same = {v: tasks_equal(group_named(b.snap.versions.get(v), g.tg.name), g.tg)
            for v in {a.job_version for a in g.old}}
    inplace = [a for a in g.old if not g.batch and same[a.job_version]]
    g.destructive = [] if g.batch else [a for a in g.old if a not in inplace]
    for a in inplace:
        if b.in_place(a, g.job, g.dep_id):
            g.current.append(a)
            g.updated.add(a.id)


def _place_canaries(b: PlanBuilder, g: Group, want: int, names: Names) -> None:
    """Canaries only, while the running deployment waits for them (and the
    missing allocations)."""
    job, tg, current, destructive = g.job, g.tg, g.current, g.destructive
    have = sum(1 for a in current if a.deployment_status.canary)
    new_canaries = max(0, want - have)
    for index in canary_names(new_canaries, tg.count, destructive, current, names.next):
        b.place(job, tg, index, g.dep_id, canary=True)
    if destructive:  # the old ones serve beside the canaries until promotion
        missing = tg.count - (len(current) - have) - len(destructive) - g.held
    else:  # nothing old left (lost, or never placed): canaries are part of the count
        missing = tg.count - len(current) - new_canaries - g.held
    for _ in range(max(0, missing)):
        b.place(job, tg, names.next(), g.dep_id)


def _count(b: PlanBuilder, g: Group, names: Names) -> bool:
    """The group brought to its count: excess allocations stopped, missing
    ones placed. False when the new version fills the count already (the
    old ones are stopped: nothing is left to replace)."""
    job, tg, current, held = g.job, g.tg, g.current, g.held
    live = len(current) + len(g.destructive) + held
    if len(current) + held >= tg.count:
        for a in g.destructive:
            b.stop(a, "alloc not needed: replaced by the new version")
        extra = sorted((a for a in current if a.client_status not in (COMPLETE, FAILED)),
                       key=lambda a: -name_index(a.name))[: len(current) + held - tg.count]
        for a in extra:
            if a.id in g.updated:  # stopped instead (one write per allocation, as Nomad
                b.drop_update(a.id)  # stops before it updates what is left in place)
            b.stop(a, "alloc not needed due to job update")
        return False
    if live > tg.count:
        # More old ones than needed (canaries took slots, or count lowered):
        # first those a canary shares a name with (Nomad's computeStop),
        # then the highest indexes.
        taken = {name_index(a.name) for a in current}
        surplus = sorted(g.destructive, key=lambda a: (name_index(a.name) not in taken,
                                                       -name_index(a.name)))[: live - tg.count]
        for a in surplus:
            b.stop(a, "alloc not needed due to job update")
        g.destructive = [a for a in g.destructive if a not in surplus]
    for _ in range(tg.count - len(current) - len(g.destructive) - held):
        b.place(job, tg, names.freed_or_next(g.free_names), g.dep_id)
    return True


def _replace(b: PlanBuilder, g: Group) -> None:
    """Destructive updates: old allocations stopped and replaced, at most
    ``max_parallel`` of the running deployment in flight."""
    tg, current = g.tg, g.current
    limit = len(g.destructive)
    if tg.HasField("update") and tg.update.max_parallel > 0 and g.dep_running:
        in_flight = sum(1 for a in current if a.deployment_id == g.dep_id
                        and not (a.deployment_status.HasField("healthy")
                                 and a.deployment_status.healthy))
        limit = max(0, tg.update.max_parallel - in_flight)
    for a in sorted(g.destructive, key=lambda a: name_index(a.name))[:limit]:
        if not b.fits(4):  # a stop and a placement, their nodes
            b.plan.more = True
            return
        b.stop(a, "alloc is being updated due to job update")
        if not b.place(g.job, tg, name_index(a.name), g.dep_id, previous=a.id):
            b.undo_stop(a)  # nowhere to go: keep the old one running

"""The placement core of the reference worker (pure: no asyncio, no gRPC).

:func:`compute_plan` turns one snapshot -- the job, its versions, its latest
deployment, its allocations, the nodes and what every node already
reserves -- into a :class:`Plan`: placements, stops and in-place updates,
the way Nomad's generic scheduler reconciles a task group:

- allocations the node drainer marked to migrate are stopped and replaced
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
- a stopped job stops everything; a batch job's completed allocations count
  as done; a system job gets one allocation per eligible node
  (:mod:`.system`).

Placement is bin-packing in Nomad's manner: the candidate nodes (ready,
eligible, not draining, in the job's datacenters) are shuffled, up to
``max(2, ceil(log2 n))`` feasible ones are scored (best fit: fuller is
better, less a penalty for co-locating the same task group) and the best
wins. What does not fit anywhere is reported in ``queued``: the worker
then creates a blocked evaluation. A plan never holds more than
``max_ops`` writes (its allocations and a usage record per node it touches;
:mod:`.plan_size`); the remainder sets ``more``: the worker plans it next.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from drover.api.types.v1 import allocation_pb2, deployment_pb2, evaluation_pb2, job_pb2, node_pb2

from . import failed as failed_allocs
from . import migrate, reschedule
from . import penalty as node_penalty
from .node_set import node_set
from .packer import Packer
from .plan_size import DEFAULT_PLAN_OBJECTS
from .resources import Vec, group_ask, is_live

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
LOST = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
PENDING = allocation_pb2.ALLOC_CLIENT_STATUS_PENDING
DEP_RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
DEP_FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED
DEP_CANCELLED = deployment_pb2.DEPLOYMENT_STATUS_CANCELLED

_INDEX = re.compile(r"\[(\d+)\]$")


@dataclass(frozen=True)
class Snapshot:
    """What one plan is computed from (copies are not taken: do not mutate)."""

    namespace: str
    job_id: str
    job: job_pb2.Job | None
    versions: Mapping[int, job_pb2.Job]
    deployment: deployment_pb2.Deployment | None
    allocs: Sequence[allocation_pb2.Allocation]
    nodes: Sequence[node_pb2.Node]
    #: Per node id: what its live allocations (of every job) reserve.
    node_used: Mapping[str, Vec]
    eval_id: str = ""
    #: Wall-clock seconds the plan is computed at (reschedule delays count on it).
    now: float = 0.0


@dataclass
class Plan:
    placements: list[allocation_pb2.Allocation] = field(default_factory=list)
    #: Stops and in-place updates: the whole new value of existing allocations.
    updates: list[allocation_pb2.Allocation] = field(default_factory=list)
    #: Per task group: allocations that fit on no node.
    queued: dict[str, int] = field(default_factory=dict)
    #: More work than fit in this plan: evaluate again.
    more: bool = False
    #: Evaluations written with the plan (reschedules due later).
    evaluations: list[evaluation_pb2.Evaluation] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.placements and not self.updates and not self.evaluations

    def node_ids(self) -> set[str]:
        return {a.node_id for a in self.placements}

    def objects(self) -> int:
        """What the plan writes in its txn: its allocations and one usage
        record per node it touches (the state service's rule)."""
        nodes = {a.node_id for a in self.placements} | {a.node_id for a in self.updates}
        return len(self.placements) + len(self.updates) + len(nodes)


def name_index(name: str) -> int:
    m = _INDEX.search(name)
    return int(m.group(1)) if m else -1


def _copy(a: allocation_pb2.Allocation) -> allocation_pb2.Allocation:
    out = allocation_pb2.Allocation()
    out.CopyFrom(a)
    return out


def _same_tasks(snap: Snapshot, tg: job_pb2.TaskGroup, a: allocation_pb2.Allocation) -> bool:
    """``a``'s version of ``tg`` runs the same tasks (an in-place update)."""
    return _tasks_equal(_group(snap.versions.get(a.job_version), tg.name), tg)


def _tasks_equal(a: job_pb2.TaskGroup | None, b: job_pb2.TaskGroup) -> bool:
    if a is None:
        return False
    return list(a.tasks) == list(b.tasks) and dict(a.meta) == dict(b.meta)


def _group(job: job_pb2.Job | None, name: str) -> job_pb2.TaskGroup | None:
    if job is None:
        return None
    return next((tg for tg in job.task_groups if tg.name == name), None)


class _Builder:
    def __init__(self, snap: Snapshot, rng: random.Random, new_id: Callable[[], str],
                 max_ops: int) -> None:
        self.snap, self.new_id, self.max_ops = snap, new_id, max_ops
        self.plan = Plan()
        self.packer = Packer(snap, rng)
        #: Per (job version, group): what one allocation asks.
        self._asks: dict[tuple[int, str], Vec] = {}

    def fits(self, more: int) -> bool:
        """``more`` objects fit beside the plan's (its usage records
        counted). Each allocation brings at most one node, so while twice
        their number fits, the plan's nodes need no counting."""
        return (2 * self.ops() + more <= self.max_ops
                or self.plan.objects() + more <= self.max_ops)

    def room(self) -> bool:
        if self.fits(2):  # an allocation, maybe a new node
            return True
        self.plan.more = True
        return False

    def stop(self, a: allocation_pb2.Allocation, why: str) -> bool:
        if not self.room():
            return False
        out = _copy(a)
        out.desired_status = STOP
        out.desired_description = why
        self.plan.updates.append(out)
        self.packer.release(a)
        return True

    def ops(self) -> int:
        return len(self.plan.placements) + len(self.plan.updates)

    def room_for(self, ops: int) -> bool:
        """``ops`` more writes fit in this plan (its usage records counted);
        else it says ``more``."""
        if self.fits(ops):
            return True
        self.plan.more = True
        return False

    def link_last(self) -> None:
        """The last stop names the last placement, its replacement, as its
        ``next_allocation``."""
        self.plan.updates[-1].next_allocation = self.plan.placements[-1].id

    def drop_update(self, alloc_id: str) -> None:
        """Take back this plan's update of ``alloc_id`` (its in-place update)."""
        self.plan.updates = [u for u in self.plan.updates if u.id != alloc_id]

    def undo_stop(self, a: allocation_pb2.Allocation) -> None:
        """Take back the last stop (of ``a``): it keeps running and its room."""
        self.plan.updates.pop()
        self.packer.used[a.node_id] = self.packer.used.get(a.node_id, Vec()) + Vec.of(a.resources)

    def in_place(self, a: allocation_pb2.Allocation, job: job_pb2.Job, dep_id: str) -> bool:
        if not self.room():
            return False
        out = _copy(a)
        out.job_version = job.version
        out.eval_id = self.snap.eval_id
        if dep_id and out.deployment_id != dep_id:
            out.deployment_id = dep_id
            out.ClearField("deployment_status")  # health is re-reported for the new deployment
        self.plan.updates.append(out)
        return True

    def place(self, job: job_pb2.Job, tg: job_pb2.TaskGroup, index: int, dep_id: str,
              canary: bool = False, previous: str = "",
              avoid: frozenset[str] = frozenset()) -> bool:
        if not self.room():
            return False
        ask = self._asks.get((job.version, tg.name))
        if ask is None:
            ask = self._asks[(job.version, tg.name)] = group_ask(tg)
        node = self.packer.place(tg.name, ask, tg.count, avoid)
        if node is None:
            self.plan.queued[tg.name] = self.plan.queued.get(tg.name, 0) + 1
            return False
        a = allocation_pb2.Allocation(
            id=self.new_id(), namespace=job.namespace, name=f"{job.id}.{tg.name}[{index}]",
            job_id=job.id, job_version=job.version, task_group=tg.name, node_id=node.id,
            deployment_id=dep_id, eval_id=self.snap.eval_id, desired_status=RUN,
            client_status=PENDING, previous_allocation=previous, resources=ask.proto())
        if canary:
            a.deployment_status.canary = True
        self.plan.placements.append(a)
        return True


def compute_plan(snap: Snapshot, *, rng: random.Random | None = None,
                 new_id: Callable[[], str] | None = None,
                 max_ops: int = DEFAULT_PLAN_OBJECTS) -> Plan:
    """The plan that moves the job's allocations towards its spec."""
    rng = rng or random.Random(0)
    if new_id is None:
        counter = iter(range(1 << 62))
        new_id = lambda: f"alloc-{next(counter)}"  # noqa: E731 (tests pass their own)
    b = _Builder(snap, rng, new_id, max_ops)
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
            from .system import reconcile_system
            reconcile_system(b, job, tg, by_group.get(tg.name, []), partial(_same_tasks, snap, tg))
            continue
        _reconcile_group(b, job, tg, by_group.get(tg.name, []))
    return b.plan


def canary_names(n: int, count: int, destructive: Sequence[allocation_pb2.Allocation],
                 current: Sequence[allocation_pb2.Allocation],
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


def _failed(b: _Builder, job: job_pb2.Job, tg: job_pb2.TaskGroup, a: allocation_pb2.Allocation,
            dep: deployment_pb2.Deployment | None, dep_id: str,
            later: list[tuple[float, allocation_pb2.Allocation]]) -> None:
    """A failed allocation of the current version (:mod:`.failed`): replaced
    now, noted for a follow-up evaluation, or kept."""
    policy = reschedule.resolve(job.type, tg.reschedule if tg.HasField("reschedule") else None)
    j = failed_allocs.judge(a, policy, b.snap.eval_id, b.snap.now, dep)
    if j.verdict is failed_allocs.Verdict.LATER:
        later.append((j.at, a))
    if j.verdict is not failed_allocs.Verdict.NOW:
        return
    if len(b.plan.placements) + len(b.plan.updates) + 2 > b.max_ops:
        b.plan.more = True
        return
    if not b.stop(a, failed_allocs.STOP_DESCRIPTION):
        return
    if not b.place(job, tg, name_index(a.name), dep_id, previous=a.id,
                   avoid=node_penalty.penalty_nodes(a)):
        b.plan.updates.pop()  # nowhere to go: it stays failed (queued: blocked evaluation)
        return
    new = b.plan.placements[-1]
    new.reschedule_tracker.CopyFrom(failed_allocs.replacement_tracker(policy, a, b.snap.now))
    b.link_last()


def _reconcile_group(b: _Builder, job: job_pb2.Job, tg: job_pb2.TaskGroup,
                     allocs: list[allocation_pb2.Allocation]) -> None:
    snap = b.snap
    dep = snap.deployment if (snap.deployment is not None
                              and snap.deployment.job_version == job.version) else None
    dep_running = dep is not None and dep.status == DEP_RUNNING
    dep_id = dep.id if dep_running and dep is not None and tg.name in dep.task_groups else ""
    dstate = dep.task_groups.get(tg.name) if dep is not None else None
    batch = job.type == job_pb2.JOB_TYPE_BATCH
    # A draining node's allocations stay until the drainer marks them to migrate.
    node_ok = node_set(snap.nodes).ready_ids

    later: list[tuple[float, allocation_pb2.Allocation]] = []  # reschedules due later
    current: list[allocation_pb2.Allocation] = []  # new version, occupying a slot
    old: list[allocation_pb2.Allocation] = []      # older version, live
    free_names: list[int] = []                     # indexes freed by stops
    migrating: list[allocation_pb2.Allocation] = []  # marked by the node drainer
    for a in allocs:
        if a.desired_status != RUN:
            continue
        if a.client_status == LOST or (is_live(a) and a.node_id not in node_ok):
            if b.stop(a, "alloc is lost since its node is down"):
                free_names.append(name_index(a.name))
            continue
        if a.client_status == COMPLETE:
            if batch and a.job_version == job.version:
                current.append(a)  # done: counts towards the group
            continue
        if a.client_status == FAILED:
            if a.job_version == job.version:
                current.append(a)  # holds its slot: replaced (now) or not (failed module)
                _failed(b, job, tg, a, dep, dep_id, later)
            elif b.stop(a, "alloc failed; replaced by the new version"):
                free_names.append(name_index(a.name))
            continue
        if migrate.marked(a):
            migrating.append(a)
            continue
        (current if a.job_version == job.version else old).append(a)
    if later:
        evals, marked = failed_allocs.later_evals(job, snap.eval_id, later, b.new_id)
        if len(b.plan.placements) + len(b.plan.updates) + len(marked) <= b.max_ops:
            b.plan.updates.extend(marked)
            b.plan.evaluations.extend(evals)
        else:
            b.plan.more = True
    if dep is not None and dep.status in (DEP_FAILED, DEP_CANCELLED) and not (
            dstate is not None and dstate.promoted):
        # Nomad's cancelUnneededCanaries: a failed or cancelled deployment's
        # un-promoted canaries go.
        for a in [a for a in current if a.deployment_status.canary
                  and a.deployment_id == dep.id and a.client_status != FAILED]:
            if b.stop(a, "alloc not needed due to job update"):
                current.remove(a)
    moved = migrate.migrate(b, job, tg, migrating, dep_id,
                            {a.id: name_index(a.name) for a in migrating})
    for a in moved.kept:
        (current if a.job_version == job.version else old).append(a)
    held = moved.held  # slots the migrations fill (their replacements)

    # Compared once per version, not per allocation (a job's old allocations
    # share a version or a few).
    same: dict[int, bool] = {}
    for v in {a.job_version for a in old}:
        same[v] = _tasks_equal(_group(snap.versions.get(v), tg.name), tg)
    inplace = [a for a in old if not batch and same[a.job_version]]
    destructive = [a for a in old if a not in inplace]
    if batch:
        destructive = []  # a running batch allocation of an old version finishes
    updated = set()  # updated in place by this plan
    for a in inplace:
        if b.in_place(a, job, dep_id):
            current.append(a)
            updated.add(a.id)

    used_names = ({name_index(a.name) for a in current} | {name_index(a.name) for a in old}
                  | {name_index(a.name) for a in migrating})

    lowest = [0]  # no free index below it: names are only ever taken

    def next_name() -> int:
        i = lowest[0]
        while i in used_names:
            i += 1
        used_names.add(i)
        lowest[0] = i + 1
        return i

    # Canaries: only while a running deployment waits for them.
    want_canaries = dstate.desired_canaries if dstate is not None and dep_running else 0
    if want_canaries and not dstate.promoted:  # type: ignore[union-attr]
        have = sum(1 for a in current if a.deployment_status.canary)
        new_canaries = max(0, want_canaries - have)
        for index in canary_names(new_canaries, tg.count, destructive, current, next_name):
            b.place(job, tg, index, dep_id, canary=True)
        if destructive:  # the old ones serve beside the canaries until promotion
            missing = tg.count - (len(current) - have) - len(destructive) - held
        else:  # nothing old left (lost, or never placed): canaries are part of the count
            missing = tg.count - len(current) - new_canaries - held
        for _ in range(max(0, missing)):
            b.place(job, tg, next_name(), dep_id)
        return

    live = len(current) + len(destructive) + held
    if len(current) + held >= tg.count:
        for a in destructive:
            b.stop(a, "alloc not needed: replaced by the new version")
        extra = sorted((a for a in current if a.client_status not in (COMPLETE, FAILED)),
                       key=lambda a: -name_index(a.name))[: len(current) + held - tg.count]
        for a in extra:
            if a.id in updated:  # stopped instead (one write per allocation, as Nomad
                b.drop_update(a.id)  # stops before it updates what is left in place)
            b.stop(a, "alloc not needed due to job update")
        return
    if live > tg.count:
        # More old ones than needed (canaries took slots, or count lowered):
        # first those a canary shares a name with (Nomad's computeStop),
        # then the highest indexes.
        taken = {name_index(a.name) for a in current}
        surplus = sorted(destructive, key=lambda a: (name_index(a.name) not in taken,
                                                     -name_index(a.name)))[: live - tg.count]
        for a in surplus:
            b.stop(a, "alloc not needed due to job update")
        destructive = [a for a in destructive if a not in surplus]
    for _ in range(tg.count - len(current) - len(destructive) - held):
        b.place(job, tg, free_names.pop() if free_names else next_name(), dep_id)

    if dep is not None and not dep_running:
        return  # paused, failed or cancelled: no destructive updates
    limit = len(destructive)
    if tg.HasField("update") and tg.update.max_parallel > 0 and dep_running:
        in_flight = sum(1 for a in current if a.deployment_id == dep_id
                        and not (a.deployment_status.HasField("healthy")
                                 and a.deployment_status.healthy))
        limit = max(0, tg.update.max_parallel - in_flight)
    for a in sorted(destructive, key=lambda a: name_index(a.name))[:limit]:
        if not b.fits(4):  # a stop and a placement, their nodes
            b.plan.more = True
            return
        b.stop(a, "alloc is being updated due to job update")
        if not b.place(job, tg, name_index(a.name), dep_id, previous=a.id):
            b.undo_stop(a)  # nowhere to go: keep the old one running

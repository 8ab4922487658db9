"""The node drainer's decisions (pure): which allocations leave a draining
node now, and which drains are done. Nomad's ``nomad/drainer``:

- per service task group, at most ``migrate.max_parallel`` of its
  allocations are migrating or not yet healthy at once: each pass marks
  ``min(drainable, healthy - (count - max_parallel))`` of the group's
  allocations on draining nodes (``handleTaskGroup``). ``healthy`` counts the
  group's allocations anywhere that are running, not stopping, not marked,
  and whose health is known (Nomad's ``HasHealth``); ``drainable`` the ones
  on a draining node not yet marked. A replacement counts once its client
  has reported its health, so the next one leaves only then;
- batch allocations are never picked: they run until they finish or the
  deadline; system jobs are drained last, once every other allocation on
  the node is client-terminal (or never, with ``ignore_system_jobs``);
- at the deadline (a force drain's is already past) every allocation left
  is marked at once and the drain completes, ``deadlined``;
- a node whose other allocations are all client-terminal completes its
  drain (its system allocations marked first); it stays ineligible;
- the allocations of a job that is gone or stopped, or of a group it no
  longer has, are marked at once (the scheduler stops them anyway).

Each job with marked allocations gets one ``node-drain`` evaluation (the
shell writes marks and evaluations in one txn per batch). Time is epoch
seconds, passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.drain.migrate import migrate_of
from drover.drain.strategy import deadline_at

TRIGGER = "node-drain"
RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
_CLIENT_TERMINAL = (allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
                    allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
                    allocation_pb2.ALLOC_CLIENT_STATUS_LOST)

JobKey = tuple[str, str]  # (namespace, job id)


@dataclass(frozen=True)
class Completion:
    node_id: str
    deadlined: bool


@dataclass
class DrainPass:
    """What one pass decided."""

    #: Allocations to mark ``desired_transition.migrate``, grouped by job.
    migrate: dict[JobKey, list[allocation_pb2.Allocation]] = field(default_factory=dict)
    complete: list[Completion] = field(default_factory=list)
    #: The earliest deadline still ahead (epoch seconds), for the timer.
    next_deadline: float | None = None

    def mark(self, a: allocation_pb2.Allocation) -> None:
        self.migrate.setdefault((a.namespace, a.job_id), []).append(a)

    @property
    def marked(self) -> int:
        return sum(len(v) for v in self.migrate.values())


def client_terminal(a: allocation_pb2.Allocation) -> bool:
    return a.client_status in _CLIENT_TERMINAL


def terminal(a: allocation_pb2.Allocation) -> bool:
    """Nomad's TerminalStatus: stopping (desired) or finished (client)."""
    return a.desired_status != RUN or client_terminal(a)


def _markable(a: allocation_pb2.Allocation) -> bool:
    return not terminal(a) and not a.desired_transition.migrate


def is_system(job: job_pb2.Job | None) -> bool:
    return job is not None and job.type == job_pb2.JOB_TYPE_SYSTEM


def decide(now: float, nodes: Sequence[node_pb2.Node],
           jobs: Mapping[JobKey, job_pb2.Job | None],
           allocs: Mapping[JobKey, Sequence[allocation_pb2.Allocation]]) -> DrainPass:
    """One pass over the draining ``nodes``; ``allocs`` holds every allocation
    of each job with one on those nodes (the healthy count spans the group)."""
    out = DrainPass()
    draining = {n.id: n for n in nodes if n.HasField("drain_strategy")}
    on_node: dict[str, list[allocation_pb2.Allocation]] = {nid: [] for nid in draining}
    for job_allocs in allocs.values():
        for a in job_allocs:
            if a.node_id in on_node:
                on_node[a.node_id].append(a)
    live_nodes: set[str] = set()
    for nid, node in draining.items():
        at = deadline_at(node.drain_strategy)
        ignore = node.drain_strategy.ignore_system_jobs
        if at is not None and now >= at:
            for a in on_node[nid]:
                if _markable(a) and not (ignore and is_system(jobs.get((a.namespace, a.job_id)))):
                    out.mark(a)
            out.complete.append(Completion(nid, True))
            continue
        if at is not None:
            out.next_deadline = at if out.next_deadline is None else min(out.next_deadline, at)
        others = [a for a in on_node[nid] if not is_system(jobs.get((a.namespace, a.job_id)))]
        if all(client_terminal(a) for a in others):
            if not ignore:
                for a in on_node[nid]:
                    if _markable(a):
                        out.mark(a)
            out.complete.append(Completion(nid, False))
            continue
        live_nodes.add(nid)
    for key, job_allocs in sorted(allocs.items()):
        _job_pass(out, jobs.get(key), job_allocs, live_nodes)
    return out


def _job_pass(out: DrainPass, job: job_pb2.Job | None,
              allocs: Sequence[allocation_pb2.Allocation], draining: set[str]) -> None:
    mine = [a for a in allocs if a.node_id in draining and _markable(a)]
    if not mine:
        return
    if job is None or job.stop:
        for a in mine:
            out.mark(a)
        return
    if job.type in (job_pb2.JOB_TYPE_SYSTEM, job_pb2.JOB_TYPE_BATCH):
        return  # system: last; batch: until done or the deadline
    groups = {tg.name: tg for tg in job.task_groups}
    by_group: dict[str, list[allocation_pb2.Allocation]] = {}
    for a in allocs:
        by_group.setdefault(a.task_group, []).append(a)
    for name, group_allocs in sorted(by_group.items()):
        drainable = sorted((a for a in group_allocs if a.node_id in draining and _markable(a)),
                           key=lambda a: a.name)
        if not drainable:
            continue
        tg = groups.get(name)
        if tg is None:
            for a in drainable:
                out.mark(a)
            continue
        healthy = sum(1 for a in group_allocs
                      if _markable(a) and a.deployment_status.HasField("healthy"))
        n = min(len(drainable), healthy - (tg.count - migrate_of(tg).max_parallel))
        for a in drainable[:max(0, n)]:
            out.mark(a)

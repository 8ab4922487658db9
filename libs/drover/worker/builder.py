"""The plan under construction (pure): what the schedulers call to stop,
update in place and place allocations.

:class:`PlanBuilder` keeps one :class:`~.plan.Plan` within ``max_ops``
writes (its allocations and a usage record per node it touches;
:mod:`.plan_size`): an operation that does not fit sets ``more`` and is
not done, and the worker plans the rest next. Placements go through the
:class:`~.packer.Packer` (best fit over the candidates) or, for a system
job, on a given node (:meth:`PlanBuilder.place_on`); a stop frees its room
for the plan's own placements. An allocation is named
``<job>.<group>[<index>]`` (:func:`alloc_name`, :func:`name_index`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2

from .packer import Packer
from .plan import Plan, Snapshot
from .resources import Vec, group_ask

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
PENDING = allocation_pb2.ALLOC_CLIENT_STATUS_PENDING

_INDEX = re.compile(r"\[(\d+)\]$")


def alloc_name(job: job_pb2.Job, tg: job_pb2.TaskGroup, index: int) -> str:
    return f"{job.id}.{tg.name}[{index}]"


def name_index(name: str) -> int:
    """The index of an allocation's name; -1 for a name without one."""
    m = _INDEX.search(name)
    return int(m.group(1)) if m else -1


def _copy(a: allocation_pb2.Allocation) -> allocation_pb2.Allocation:
    out = allocation_pb2.Allocation()
    out.CopyFrom(a)
    return out


class PlanBuilder:
    """One plan being built over one snapshot (module doc)."""

    def __init__(self, snap: Snapshot, rng: random.Random, new_id: Callable[[], str],
                 max_ops: int) -> None:
        self.snap, self.new_id, self.max_ops = snap, new_id, max_ops
        self.plan = Plan()
        self.packer = Packer(snap, rng)
        #: Per (job version, group): what one allocation asks.
        self._asks: dict[tuple[int, str], Vec] = {}

    def ops(self) -> int:
        return len(self.plan.placements) + len(self.plan.updates)

    def fits(self, more: int) -> bool:
        """``more`` objects fit beside the plan's (its usage records
        counted). Each allocation brings at most one node, so while twice
        their number fits, the plan's nodes need no counting."""
        return (2 * self.ops() + more <= self.max_ops
                or self.plan.objects() + more <= self.max_ops)

    def room_for(self, ops: int) -> bool:
        """``ops`` more writes fit in this plan (its usage records counted);
        else it says ``more``."""
        if self.fits(ops):
            return True
        self.plan.more = True
        return False

    def room(self) -> bool:
        """Room for one more allocation (and maybe a new node)."""
        return self.room_for(2)

    def stop(self, a: allocation_pb2.Allocation, why: str,
             client_status: allocation_pb2.AllocClientStatus | None = None) -> bool:
        """Stop ``a`` for ``why``; with ``client_status`` (Nomad's
        ``AppendStoppedAlloc``: lost) its client status too."""
        if not self.room():
            return False
        out = _copy(a)
        out.desired_status = STOP
        out.desired_description = why
        if client_status is not None:
            out.client_status = client_status
        self.plan.updates.append(out)
        self.packer.release(a)
        return True

    def drop_update(self, alloc_id: str) -> None:
        """Take back this plan's update of ``alloc_id`` (its in-place update)."""
        self.plan.updates = [u for u in self.plan.updates if u.id != alloc_id]

    def undo_stop(self, a: allocation_pb2.Allocation) -> None:
        """Take back the last stop (of ``a``): it keeps running and its room."""
        self.plan.updates.pop()
        self.packer.restore(a)

    def link_last(self) -> None:
        """The last stop names the last placement, its replacement, as its
        ``next_allocation``."""
        self.plan.updates[-1].next_allocation = self.plan.placements[-1].id

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
        """Place allocation ``index`` of ``tg`` on the best node the packer
        finds (``avoid``: a replacement's penalty nodes); queued if none."""
        if not self.room():
            return False
        ask = self._ask(job, tg)
        node = self.packer.place(tg.name, ask, tg.count, avoid)
        if node is None:
            self._queue(tg)
            return False
        a = self._new(job, tg, index, node, ask, dep_id, previous)
        if canary:
            a.deployment_status.canary = True
        self.plan.placements.append(a)
        return True

    def place_on(self, job: job_pb2.Job, tg: job_pb2.TaskGroup, node: node_pb2.Node,
                 previous: str = "") -> bool:
        """Place ``tg``'s one allocation on ``node`` (a system job); queued
        if the node has no room for it."""
        if not self.room():
            return False
        ask = self._ask(job, tg)
        after = self.packer.used.get(node.id, Vec()) + ask
        if not after.fits_in(Vec.of(node.resources)):
            self._queue(tg)
            return False
        self.packer.used[node.id] = after
        self.plan.placements.append(self._new(job, tg, 0, node, ask, "", previous))
        return True

    def _ask(self, job: job_pb2.Job, tg: job_pb2.TaskGroup) -> Vec:
        ask = self._asks.get((job.version, tg.name))
        if ask is None:
            ask = self._asks[(job.version, tg.name)] = group_ask(tg)
        return ask

    def _queue(self, tg: job_pb2.TaskGroup) -> None:
        self.plan.queued[tg.name] = self.plan.queued.get(tg.name, 0) + 1

    def _new(self, job: job_pb2.Job, tg: job_pb2.TaskGroup, index: int, node: node_pb2.Node,
             ask: Vec, dep_id: str, previous: str) -> allocation_pb2.Allocation:
        return allocation_pb2.Allocation(
            id=self.new_id(), namespace=job.namespace, name=alloc_name(job, tg, index),
            job_id=job.id, job_version=job.version, task_group=tg.name, node_id=node.id,
            deployment_id=dep_id, eval_id=self.snap.eval_id, desired_status=RUN,
            client_status=PENDING, previous_allocation=previous, resources=ask.proto())

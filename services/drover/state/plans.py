"""SubmitPlan: Nomad's plan applier.

SubmitPlan writes one worker's plan for one job -- placements, stops and
in-place updates -- in ONE etcd txn, so it applies whole or not at all
(atomic within etcd's txn cap: a bigger plan is refused up front). It is
refused with PLAN_STALE when the state the worker computed it from moved:

- the job's modify index, the set of the job's allocations and the modify
  index of each allocation the plan updates are checked against this
  replica's cache *after a sync* (so it is the current etcd revision), and
  the job, every updated allocation, every new allocation's absence and as
  many placed-on nodes (at their current index) as etcd's compare cap
  allows are compared in the txn itself;
- every node placed on must be ready, eligible, not draining, and have room
  for the placements on top of what its live allocations reserve (minus the
  ones this plan stops): Nomad's per-node re-check. Plans are applied one at
  a time per replica (a lock), so two plans on one replica never both take
  the last room on a node; across replicas the txn's compares cover the job
  and node objects, and capacity races between two replicas planning
  different jobs onto one node in the same instant are not excluded.

Capacity freed by a plan (stops) or by a node (ready, registered, drain
off) unblocks blocked evaluations: they are stored as pending in the same
txn and the broker, following the event stream, requeues them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, node_pb2
from drover.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from drover.state import codec
from drover.state.evaluations import validated_evals
from drover.state.reads import check_name, namespace_arg
from drover.state.service_base import Base
from drover.state.store import Compare, Op, Put
from drover.state.writes import MAX_OBJECT_OPS
from drover.worker.resources import Vec, is_live, used

#: etcd caps compares per txn like ops (the revision marker needs none).
MAX_COMPARES = 128

_READY = node_pb2.NODE_STATUS_READY
_INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
_BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED


class PlanStale(FailedPrecondition):
    """The state a plan was computed from has moved: re-read and plan again."""

    reason = "PLAN_STALE"


def node_schedulable(node: node_pb2.Node) -> bool:
    return (node.status == _READY and not node.drain
            and node.scheduling_eligibility != _INELIGIBLE)


class PlansRpc(Base):
    _plan_lock: asyncio.Lock | None = None

    def _lock(self) -> asyncio.Lock:
        if self._plan_lock is None:
            self._plan_lock = asyncio.Lock()
        return self._plan_lock

    # -- SubmitPlan -------------------------------------------------------

    async def SubmitPlan(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.job_id, "job_id")
        placements, updates, evs = _validate_plan(request, ns)
        self.writer.check_size(len(placements) + len(updates) + len(evs), "plan")
        async with self._lock():
            await self.cache.sync()
            compares, ops, unblocked = self._check_plan(request, ns, placements, updates, evs)
            try:
                rev = await self.writer.commit(compares, ops, self.fence(context))
            except Conflict as e:
                raise PlanStale("the state the plan was computed from changed while it was "
                                "written; re-read and plan again",
                                metadata={"what": "txn"}) from e
        return state_pb2.SubmitPlanResponse(index=rev, placed=len(placements),
                                            updated=len(updates), unblocked=unblocked)

    def _check_plan(
        self, request: Any, ns: str, placements: list[allocation_pb2.Allocation],
        updates: list[allocation_pb2.Allocation], evs: list[evaluation_pb2.Evaluation],
    ) -> tuple[list[Compare], list[Op], int]:
        index = str(self.cache.revision)

        def stale(msg: str, what: str) -> PlanStale:
            return PlanStale(msg + "; re-read and plan again",
                             metadata={"what": what, "index": index})

        jobs = self.cache.tables[codec.JOBS]
        job_entry = jobs.objects.get(f"{ns}/{request.job_id}")
        # job_index 0: the worker found the job purged and stops what is left.
        job_mod = job_entry[1] if job_entry is not None else 0
        if job_mod != request.job_index:
            if job_entry is None:
                raise NotFound(f"job {request.job_id!r} not found in namespace {ns!r}")
            raise stale(f"job {request.job_id!r} is at index {job_mod}, "
                        f"the plan read {request.job_index}", "job")
        if job_entry is None and placements:
            raise InvalidArgument(f"job {request.job_id!r} is gone: a plan for it may only stop",
                                  metadata={"field": "placements"})
        allocs = self.cache.tables[codec.ALLOCATIONS]
        current = {}
        for order in allocs.candidates("job_id", request.job_id).iterate(None, False):
            if order[1].startswith(ns + "/"):
                e = allocs.objects.get(order[1])
                if e is not None:
                    current[order[1].partition("/")[2]] = e
        # The set must be the one read (an allocation added or removed by someone
        # else changes what the plan should be); a client's report on an
        # allocation the plan leaves alone does not (Nomad's applier ignores
        # it too), or every health report would refuse the plans of its job.
        if set(current) != set(request.alloc_indexes):
            raise stale(f"the allocations of job {request.job_id!r} changed", "allocations")
        compares = [Compare(self.keys.key(codec.JOBS, ns, request.job_id), "mod", job_mod)]
        ops: list[Op] = []
        now = self.now()
        stopping: dict[str, Vec] = {}
        for a in updates:
            e = current.get(a.id)
            if e is None:
                raise InvalidArgument(f"update of allocation {a.id!r}, which is not an "
                                      f"allocation of job {request.job_id!r}",
                                      metadata={"field": "updates"})
            if e[1] != request.alloc_indexes[a.id]:
                raise stale(f"allocation {a.id!r} changed since it was read", "allocations")
            old = allocs.decode_entry(e)
            if is_live(old) and not is_live(a):
                stopping[old.node_id] = stopping.get(old.node_id, Vec()) + Vec.of(old.resources)
            a.create_time.CopyFrom(old.create_time)
            a.modify_time.CopyFrom(now)
            key = self.keys.key(codec.ALLOCATIONS, ns, a.id)
            compares.append(Compare(key, "mod", e[1]))
            ops.append(Put(key, codec.encode(a)))
        node_compares = self._check_nodes(request, placements, stopping, stale)
        for a in placements:
            if allocs.objects.get(f"{ns}/{a.id}") is not None:
                raise InvalidArgument(f"placement {a.id!r} already exists",
                                      metadata={"field": "placements"})
            a.create_time.CopyFrom(now)
            a.modify_time.CopyFrom(now)
            ops.append(Put(self.keys.key(codec.ALLOCATIONS, ns, a.id), codec.encode(a)))
        for ev in evs:
            key = self.keys.key(codec.EVALUATIONS, ev.namespace, ev.id)
            compares.append(Compare(key, "mod", 0))
            ops.append(Put(key, codec.encode(ev)))
        # Within the compare cap: nodes first, then the new keys' absence.
        room = MAX_COMPARES - 1 - len(compares)
        compares.extend(node_compares[:room])
        room = MAX_COMPARES - 1 - len(compares)
        compares.extend(Compare(self.keys.key(codec.ALLOCATIONS, ns, a.id), "mod", 0)
                        for a in placements[:max(0, room)])
        unblocked = 0
        if stopping:
            room = min(MAX_OBJECT_OPS - len(ops), MAX_COMPARES - 1 - len(compares))
            extra, unblocked = self._unblock(room, skip=(ns, request.job_id))
            for c, op in extra:
                compares.append(c)
                ops.append(op)
        return compares, ops, unblocked

    def _check_nodes(self, request: Any, placements: list[allocation_pb2.Allocation],
                     stopping: dict[str, Vec], stale: Any) -> list[Compare]:
        nodes = self.cache.tables[codec.NODES]
        allocs = self.cache.tables[codec.ALLOCATIONS]
        want: dict[str, Vec] = {}
        for a in placements:
            want[a.node_id] = want.get(a.node_id, Vec()) + Vec.of(a.resources)
        compares = []
        for node_id, ask in sorted(want.items()):
            e = nodes.objects.get(f"{codec.GLOBAL_NS}/{node_id}")
            if e is None:
                raise stale(f"node {node_id!r} is gone", "nodes")
            if node_id not in request.node_indexes:
                raise InvalidArgument(f"node_indexes lacks node {node_id!r} the plan places on",
                                      metadata={"field": "node_indexes"})
            # No equality with the index read: a heartbeat moves it. What matters
            # is checked here, on the current node (and compared in the txn).
            node = nodes.decode_entry(e)
            if not node_schedulable(node):
                raise stale(f"node {node_id!r} no longer takes allocations", "nodes")
            on_node = (allocs.decode_entry(x) for x in entries(allocs, "node_id", node_id))
            free = Vec.of(node.resources) - used(on_node) + stopping.get(node_id, Vec())
            if not ask.fits_in(free):
                raise stale(f"node {node_id!r} has no room for the placements "
                            f"(free cpu {free.cpu} MHz, memory {free.memory_mb} MB)", "capacity")
            compares.append(Compare(self.keys.key(codec.NODES, codec.GLOBAL_NS, node_id),
                                    "mod", e[1]))
        return compares

    def _unblock(self, room: int, skip: tuple[str, str] | None = None,
                 ) -> tuple[list[tuple[Compare, Op]], int]:
        """Store up to ``room`` blocked evaluations as pending (capacity grew)."""
        evals = self.cache.tables[codec.EVALUATIONS]
        out: list[tuple[Compare, Op]] = []
        for order in evals.candidates("status", "blocked").iterate(None, False):
            if len(out) >= room:
                break
            e = evals.objects.get(order[1])
            if e is None:
                continue
            ev = evals.decode_entry(e)
            if ev.status != _BLOCKED or (skip and (ev.namespace, ev.job_id) == skip):
                continue
            ev.status = evaluation_pb2.EVALUATION_STATUS_PENDING
            ev.status_description = "unblocked: capacity changed"
            ev.modify_time.CopyFrom(self.now())
            key = self.keys.key(codec.EVALUATIONS, ev.namespace, ev.id)
            out.append((Compare(key, "mod", e[1]), Put(key, codec.encode(ev))))
        return out, len(out)


def entries(table: Any, field: str, value: str) -> Iterable[Any]:
    for order in table.candidates(field, value).iterate(None, False):
        e = table.objects.get(order[1])
        if e is not None:
            yield e


def _validate_plan(request: Any, ns: str) -> tuple[
    list[allocation_pb2.Allocation], list[allocation_pb2.Allocation],
    list[evaluation_pb2.Evaluation],
]:
    if not request.placements and not request.updates and not request.evaluations:
        raise InvalidArgument("a plan must place, update or evaluate something",
                              metadata={"field": "placements"})
    out: list[list[allocation_pb2.Allocation]] = [[], []]
    for n, (name, items) in enumerate((("placements", request.placements),
                                       ("updates", request.updates))):
        for i, src in enumerate(items):
            a = allocation_pb2.Allocation()
            a.CopyFrom(src)
            f = f"{name}[{i}]"
            check_name(a.id, f"{f}.id")
            a.namespace = a.namespace or ns
            if a.namespace != ns or a.job_id != request.job_id:
                raise InvalidArgument(f"{f} is not an allocation of job {request.job_id!r} "
                                      f"in namespace {ns!r}", metadata={"field": f})
            if n == 0:
                check_name(a.node_id, f"{f}.node_id")
                if a.desired_status != allocation_pb2.ALLOC_DESIRED_STATUS_RUN:
                    raise InvalidArgument(f"{f}.desired_status must be RUN",
                                          metadata={"field": f"{f}.desired_status"})
            out[n].append(a)
    evs = validated_evals(request.evaluations)
    return out[0], out[1], evs

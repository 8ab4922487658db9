"""UpdateNodeStatus: heartbeats, down, drain and eligibility of a node.

A node going down or draining marks its live allocations lost and creates a
``node-update`` evaluation per affected job, in the same txn (bounded by the
txn cap: the rest are lost on the node's next status change). A node that
becomes schedulable (ready, eligible, not draining; also on registration,
through UpsertNode's hook) unblocks blocked evaluations. A heartbeat from the
node itself refreshes ``last_heartbeat`` at most every
:data:`HEARTBEAT_WRITE_EVERY` seconds and is otherwise not written; it never
changes the node's status (an operator's down or drain stays).
"""

from __future__ import annotations

import uuid
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, node_pb2
from drover.errors import Conflict, NotFound
from drover.state import codec
from drover.state.jobs import job_type_name
from drover.state.plans import PlansRpc, entries, node_schedulable
from drover.state.reads import check_name
from drover.state.store import Compare, Op, Put
from drover.state.writes import MAX_OBJECT_OPS
from drover.worker.resources import is_live

#: A heartbeat is written when the stored one is at least this old (seconds).
HEARTBEAT_WRITE_EVERY = 2.0

_DOWN = (node_pb2.NODE_STATUS_DOWN, node_pb2.NODE_STATUS_DISCONNECTED)


class NodeStatusRpc(PlansRpc):
    def unblock_for_node(self, node: node_pb2.Node, old: node_pb2.Node | None,
                         compares: list[Compare], ops: list[Op]) -> int:
        """UpsertNode's hook: a node that became schedulable unblocks."""
        if not node_schedulable(node) or (old is not None and node_schedulable(old)):
            return 0
        extra, n = self._unblock(MAX_OBJECT_OPS - len(ops))
        for c, op in extra:
            compares.append(c)
            ops.append(op)
        return n

    # -- UpdateNodeStatus -------------------------------------------------

    async def UpdateNodeStatus(self, request: Any, context: Any) -> Any:
        check_name(request.id, "id")
        for attempt in range(3):
            await self.cache.sync()
            try:
                return await self._node_status(request, context)
            except Conflict:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _node_status(self, request: Any, context: Any) -> Any:
        nodes = self.cache.tables[codec.NODES]
        e = nodes.objects.get(f"{codec.GLOBAL_NS}/{request.id}")
        if e is None:
            raise NotFound(f"node {request.id!r} not found")
        node = nodes.decode_entry(e)
        before = node_schedulable(node)
        was_down = node.status in _DOWN or node.drain
        if request.heartbeat and (not node.last_heartbeat.ByteSize() or _age(
                node.last_heartbeat, self.now()) >= HEARTBEAT_WRITE_EVERY):
            node.last_heartbeat.CopyFrom(self.now())
        if request.status:
            node.status = request.status
        if request.HasField("drain"):
            node.drain = request.drain
        if request.scheduling_eligibility:
            node.scheduling_eligibility = request.scheduling_eligibility
        old = nodes.decode_entry(e)
        if node == old:
            return state_pb2.UpdateNodeStatusResponse(index=self.cache.revision)
        node.status_updated_at.CopyFrom(self.now())
        key = self.keys.key(codec.NODES, codec.GLOBAL_NS, node.id)
        compares = [Compare(key, "mod", e[1])]
        ops: list[Op] = [Put(key, codec.encode(node))]
        lost, unblocked = 0, 0
        eval_ids: list[str] = []
        if (node.status in _DOWN or node.drain) and not was_down:
            why = "node is down" if node.status in _DOWN else "node is draining"
            lost, eval_ids = self._mark_lost(node.id, why, compares, ops)
        elif node_schedulable(node) and not before:
            extra, unblocked = self._unblock(MAX_OBJECT_OPS - len(ops))
            for c, op in extra:
                compares.append(c)
                ops.append(op)
        rev = await self.writer.commit(compares, ops, self.fence(context))
        return state_pb2.UpdateNodeStatusResponse(index=rev, lost=lost, eval_ids=eval_ids,
                                                  unblocked=unblocked)

    def _mark_lost(self, node_id: str, why: str, compares: list[Compare],
                   ops: list[Op]) -> tuple[int, list[str]]:
        """Mark the node's live allocations lost and evaluate their jobs.

        Bounded by the txn cap: a node with more live allocations than fit
        loses the rest on its next status change (a sim node re-reports)."""
        allocs = self.cache.tables[codec.ALLOCATIONS]
        jobs: dict[tuple[str, str], Any] = {}
        lost = 0
        for e in entries(allocs, "node_id", node_id):
            a = allocs.decode_entry(e)
            if not is_live(a):
                continue
            if len(ops) + 1 + len(jobs) + (0 if (a.namespace, a.job_id) in jobs else 1) \
                    > MAX_OBJECT_OPS:
                break
            a.client_status = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
            a.client_description = why
            a.modify_time.CopyFrom(self.now())
            key = self.keys.key(codec.ALLOCATIONS, a.namespace, a.id)
            compares.append(Compare(key, "mod", e[1]))
            ops.append(Put(key, codec.encode(a)))
            lost += 1
            jobs.setdefault((a.namespace, a.job_id), a)
        ids = []
        job_table = self.cache.tables[codec.JOBS]
        for (ns, job_id), _ in jobs.items():
            job = job_table.decode(f"{ns}/{job_id}")
            ev = evaluation_pb2.Evaluation(
                id=str(uuid.uuid4()), namespace=ns, priority=job.priority if job else 50,
                type=_type_name(job), triggered_by="node-update", job_id=job_id,
                node_id=node_id, status=evaluation_pb2.EVALUATION_STATUS_PENDING,
                create_time=self.now(), modify_time=self.now(),
                job_modify_index=job.job_modify_index if job else 0)
            ops.append(Put(self.keys.key(codec.EVALUATIONS, ns, ev.id), codec.encode(ev)))
            ids.append(ev.id)
        return lost, ids


def _age(ts: Any, now: Any) -> float:
    return float((now.ToNanoseconds() - ts.ToNanoseconds()) / 1e9)


def _type_name(job: Any) -> str:
    return "service" if job is None else job_type_name(job)

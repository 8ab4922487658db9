"""GarbageCollect: one bounded step of a garbage collection walk (leader only).

The deployment watcher's leader drives the walk (:mod:`drover.deployments.gc`):
per kind it calls this RPC with a cutoff time and the cursor of the previous
answer until ``done``. One call examines at most ``max_examined`` objects of
the kind after the cursor, in create order, judges each with the pure rules
of :mod:`.gc_rules` on this replica's cache, and deletes what may go, a
page at a time as pages fill (so the event loop is held for one page's
judging at most, never for a whole call), in bounded txns (:mod:`.reaper`:
at most 120 objects, each compared on the mod_revision it was judged at).
An object that changed since it was judged fails its page as a Conflict;
that page is skipped (the next pass judges it again), the rest of the call
goes on. The cursor is the last *examined*
``(create_index, key)``, so deletions behind it never shift the walk.

The fence is required, not optional: GC writes are leader writes, and a
deposed leader's pass must not delete anything (FENCE_LOST on its first txn).
Only the first call of a walk syncs the cache with etcd; the compares make
a stale cache cost a skipped page, never a wrong delete.
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.errors import Conflict, InvalidArgument
from drover.paging import Key
from drover.state.cache import Cache
from drover.state.core import codec
from drover.state.core.cache_view import CacheView
from drover.state.core.entries import Entry
from drover.state.core.gc_rules import (
    TERMINAL_EVAL,
    AllocView,
    JobView,
    alloc_terminal,
    deployment_collectable,
    eval_verdict,
    job_collectable,
    node_collectable,
)
from drover.state.core.reap import PAGE, Doomed, Tally, job_owned, pack
from drover.state.core.tables import Table
from drover.state.jobs.core.purge import blockers as purge_blockers
from drover.state.pipeline import Caller, WriteCalls
from drover.state.reaper import delete_page

DEFAULT_EXAMINED = 1000
MAX_EXAMINED = 10_000

_KINDS = {
    state_pb2.GC_KIND_EVALUATIONS: codec.EVALUATIONS,
    state_pb2.GC_KIND_DEPLOYMENTS: codec.DEPLOYMENTS,
    state_pb2.GC_KIND_JOBS: codec.JOBS,
    state_pb2.GC_KIND_NODES: codec.NODES,
}


def _seconds(ts: Any) -> float:
    return float(ts.seconds) + ts.nanos / 1e9


class GarbageCollectRpc:
    def __init__(self, cache: Cache, keys: codec.KeyCodec, writes: WriteCalls) -> None:
        self.cache, self.keys, self.writes = cache, keys, writes

    async def collect(self, request: Any, caller: Caller) -> Any:
        fence = self.writes.require_fence(caller, "GarbageCollect")
        kind = _KINDS.get(request.kind)
        if kind is None:
            raise InvalidArgument("kind must be evaluations, deployments, jobs or nodes",
                                  metadata={"field": "kind"})
        limit = request.max_examined or DEFAULT_EXAMINED
        if not 1 <= limit <= MAX_EXAMINED:
            raise InvalidArgument(f"max_examined must be 1..{MAX_EXAMINED}",
                                  metadata={"field": "max_examined"})
        if not request.HasField("cutoff"):
            raise InvalidArgument("cutoff is required", metadata={"field": "cutoff"})
        cutoff = _seconds(request.cutoff)
        after = Key(request.after_index, request.after_key) if request.after_index else None
        if after is None:
            await self.cache.sync()
        table = self.cache.tables[kind]
        judge = {codec.EVALUATIONS: self._judge_eval, codec.DEPLOYMENTS: self._judge_deployment,
                 codec.JOBS: self._judge_job, codec.NODES: self._judge_node}[kind]
        examined, last, done = 0, after, False
        tally = Tally()
        while not done and examined < limit:
            # Judge until a page is full, delete it, then go on from the cursor
            # with a fresh iterator (the deletes change the index under it):
            # the event loop is never held for more than one page's judging.
            groups: list[list[Doomed]] = []
            pending = 0
            done = True
            for order in table.candidates(None, None).iterate(last, False):
                if examined >= limit or pending >= PAGE:
                    done = False
                    break
                examined += 1
                last = order
                e = table.objects.get(str(order[1]))
                if e is not None:
                    group = judge(table, str(order[1]), e, cutoff)
                    if group:
                        groups.append(group)
                        pending += len(group)
            for page in pack(groups):
                try:
                    await delete_page(self.writes.transact, self.keys, page, tally, fence)
                except Conflict:
                    continue  # changed since judged: the next pass judges it again
        resp = state_pb2.GarbageCollectResponse(
            examined=examined, done=done, txns=tally.txns, largest_txn=tally.largest_txn,
            evaluations=tally.count(codec.EVALUATIONS),
            allocations=tally.count(codec.ALLOCATIONS),
            deployments=tally.count(codec.DEPLOYMENTS), jobs=tally.count(codec.JOBS),
            job_versions=tally.count(codec.JOB_VERSIONS), nodes=tally.count(codec.NODES),
            index=self.cache.revision)
        if last is not None and not done:
            resp.after_index, resp.after_key = int(last[0]), str(last[1])
        return resp

    # -- judges: the cache's view of one object, then the pure rule ----------

    def _alloc_views(
        self, field: str, value: str, ns: str | None
    ) -> list[tuple[Doomed, AllocView]]:
        allocs = self.cache.tables[codec.ALLOCATIONS]
        out: list[tuple[Doomed, AllocView]] = []
        if not allocs.objects:
            return out  # no allocations at all (an evaluation backlog): skip the index
        get = allocs.rows.getter
        desired, client = get("desired_status"), get("client_status")
        for order in allocs.candidates(field, value).iterate(None, False):
            nsid = str(order[1])
            if ns is not None and not nsid.startswith(ns + "/"):
                continue
            e = allocs.objects.get(nsid)
            if e is None:
                continue
            a = allocs.decode_entry(e)
            out.append((Doomed(codec.ALLOCATIONS, nsid, e[1]),
                        AllocView(str(desired(e)), str(client(e)), _seconds(a.modify_time),
                                  a.create_index)))
        return out

    def _job_view(self, ns: str, job_id: str) -> JobView | None:
        jobs = self.cache.tables[codec.JOBS]
        e = jobs.objects.get(f"{ns}/{job_id}")
        if e is None:
            return None
        get = jobs.rows.getter
        return JobView(str(get("type")(e)), bool(get("stop")(e)), str(get("status")(e)),
                       jobs.decode_entry(e).job_modify_index)

    def _judge_eval(self, table: Table, nsid: str, e: Entry, cutoff: float) -> list[Doomed]:
        get = table.rows.getter
        status = str(get("status")(e))
        if status not in TERMINAL_EVAL:
            return []
        ev = table.decode_entry(e)
        ns = nsid.split("/", 1)[0]
        allocs = self._alloc_views("eval_id", ev.id, ns)
        # Only a batch evaluation's fate depends on its job (gc_rules).
        job = self._job_view(ns, ev.job_id) if ev.job_id and ev.type == "batch" else None
        goes, gone = eval_verdict(status, ev.type, _seconds(ev.modify_time), job,
                                  (v for _, v in allocs), cutoff)
        out = [allocs[i][0] for i in gone]
        if goes:
            out.append(Doomed(codec.EVALUATIONS, nsid, e[1]))
        return out

    def _judge_deployment(self, table: Table, nsid: str, e: Entry,
                          cutoff: float) -> list[Doomed]:
        status = str(table.rows.getter("status")(e))
        d = table.decode_entry(e)
        referenced = len(self.cache.tables[codec.ALLOCATIONS].candidates(
            "deployment_id", d.id)) > 0
        if deployment_collectable(status, _seconds(d.modify_time), referenced, cutoff):
            return [Doomed(codec.DEPLOYMENTS, nsid, e[1])]
        return []

    def _judge_job(self, table: Table, nsid: str, e: Entry, cutoff: float) -> list[Doomed]:
        ns, job_id = nsid.split("/", 1)
        if bool(table.decode_entry(e).purge_requested):
            return self._judge_purge(ns, job_id, nsid, e)
        view = self._job_view(ns, job_id)
        if view is None or not (view.type == "batch" or view.stop):
            return []
        job = table.decode_entry(e)
        evals = self.cache.tables[codec.EVALUATIONS]
        statuses, modified = [], _seconds(job.submit_time)
        for order in evals.candidates("job_id", job_id).iterate(None, False):
            ee = evals.objects.get(str(order[1]))
            if ee is None or not str(order[1]).startswith(ns + "/"):
                continue
            statuses.append(str(evals.rows.getter("status")(ee)))
            modified = max(modified, _seconds(evals.decode_entry(ee).modify_time))
        allocs = self._alloc_views("job_id", job_id, ns)
        modified = max([modified, *(v.modified for _, v in allocs)])
        if not job_collectable(view, modified, statuses, (v for _, v in allocs), cutoff):
            return []
        cache = CacheView(self.cache.tables, self.cache.revision, False)
        return [*job_owned(cache, ns, job_id), Doomed(codec.JOBS, nsid, e[1])]

    def _judge_purge(self, ns: str, job_id: str, nsid: str, e: Entry) -> list[Doomed]:
        """A purge that waited for its allocations (:mod:`drover.state.jobs.core.purge`):
        due as soon as nothing blocks it, whatever the thresholds."""
        cache = CacheView(self.cache.tables, self.cache.revision, False)
        if next(purge_blockers(cache, ns, job_id), None) is not None:
            return []
        return [*job_owned(cache, ns, job_id), Doomed(codec.JOBS, nsid, e[1])]

    def _judge_node(self, table: Table, nsid: str, e: Entry, cutoff: float) -> list[Doomed]:
        status = str(table.rows.getter("status")(e))
        if status != "down":
            return []
        node = table.decode_entry(e)
        live = sum(1 for _, v in self._alloc_views("node_id", node.id, None)
                   if not alloc_terminal(v))
        if node_collectable(status, _seconds(node.status_updated_at), live, cutoff):
            return [Doomed(codec.NODES, nsid, e[1])]
        return []

"""The node drainer: leader work beside the deployment watcher (Nomad runs
its drainer on the leader too). The async shell around
:func:`~.core.drainer.decide`.

A :class:`~drover.coord.LeaderComponent` in the deployment watcher's
election: it runs only on that service's leader, every write carries the
term's fence (UpdateAllocDesiredTransition and a drain's completion require
it), so a deposed leader cannot move allocations or end a drain.

Fed like the watcher: one subscription to nodes and one to allocations
for the whole leader, opened "from now" before the first read. The streams
only *wake* the drainer (a node's drain changed, or an allocation changed
on a draining node or of a job being drained); each pass then reads what
it decides on -- the draining nodes, their allocations, and each affected
job with all its allocations (the healthy count spans the group) -- with
consistent reads, so a decision never rests on an event missed between a
read and a stream. Passes are batched: at most one per
``batch_interval`` (Nomad's BatchUpdateInterval, 1 s), however many events
arrived; a pass also runs at the earliest drain deadline, and every
``max_sleep`` regardless. Reads grow with draining nodes and their jobs,
not with the cluster, and nothing is read while nothing drains.

Marks go in txn-sized batches, each job's marks with its one ``node-drain``
evaluation in the same txn. A conflict (an allocation changed since it was
read) drops that batch: the next pass decides again on fresh reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.coord.fence import Fence
from drover.coord.guard import LeaderGuard
from drover.coord.term import Term
from drover.deployments.config import DrainerConfig
from drover.errors import Conflict, FenceLost, NotFound, Unavailable
from drover.tasks import cancel_and_wait

from .core.drainer import TRIGGER, DrainPass, JobKey, decide
from .core.walltime import WallClock

log = logging.getLogger(__name__)

UPSERT = state_pb2.EVENT_TYPE_UPSERT
#: Objects per UpdateAllocDesiredTransition (etcd's default txn cap, less the
#: revision marker and the fence's room).
MAX_BATCH = 120
_JOB_TYPES = {job_pb2.JOB_TYPE_BATCH: "batch", job_pb2.JOB_TYPE_SYSTEM: "system"}


class DrainStateApi(Protocol):
    """The drainer's calls on the state service (GrpcStateApi implements them)."""

    def subscribe(self, topic: int, from_index: int) -> AsyncIterator[Any]: ...

    async def list_draining_nodes(self) -> list[node_pb2.Node]: ...

    async def allocations_where(self, filter_: str) -> list[allocation_pb2.Allocation]: ...

    async def get_job(self, namespace: str, job_id: str) -> job_pb2.Job | None: ...

    async def update_alloc_desired_transition(
        self, request: state_pb2.UpdateAllocDesiredTransitionRequest, fence: Fence) -> int: ...

    async def update_node_drain(self, request: state_pb2.UpdateNodeDrainRequest,
                                fence: Fence) -> int: ...


@dataclass
class DrainerStats:
    passes: int = 0
    marked: int = 0
    completed: int = 0
    writes: int = 0


class NodeDrainer:
    def __init__(self, state: DrainStateApi, service: str = "deployments", *,
                 clock: WallClock = time.time, config: DrainerConfig,
                 new_id: Callable[[], str]) -> None:
        self.state = state
        self.service = service
        self.config = config
        self._clock = clock
        self._new_id = new_id
        self.guard = LeaderGuard(service)
        self.stats = DrainerStats()
        self._task: Any = None
        self._kick = asyncio.Event()
        self._nodes: set[str] = set()   # draining, as of the last pass
        self._jobs: set[JobKey] = set()  # being drained, as of the last pass

    # -- LeaderComponent ------------------------------------------------------

    async def establish(self, term: Term) -> None:
        self.guard.enable(term)
        self._kick.set()
        self._task = term.spawn(self._main(term), name="node-drainer")

    async def revoke(self) -> None:
        self.guard.disable()
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait((task,), within=self.config.stop_timeout,
                                  what=f"{self.service} drainer revoke")
        self._nodes.clear()
        self._jobs.clear()

    # -- the loop -------------------------------------------------------------

    async def _main(self, term: Term) -> None:
        while True:
            try:
                await self._session(term)
            except FenceLost:
                return
            except Exception as err:  # a stream or read failed: start again
                log.warning("node drainer resyncing after: %r", err)
            await asyncio.sleep(self.config.resync_backoff)

    async def _session(self, term: Term) -> None:
        nodes = self.state.subscribe(state_pb2.TOPIC_NODE, 0)
        allocs = self.state.subscribe(state_pb2.TOPIC_ALLOCATION, 0)
        try:
            await anext(nodes)
            await anext(allocs)
            self._kick.set()  # the first pass reads everything after the streams opened
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._pump(nodes, self._on_node))
                tg.create_task(self._pump(allocs, self._on_alloc))
                tg.create_task(self._passes(term))
        finally:
            for stream in (nodes, allocs):
                with contextlib.suppress(Exception):
                    await stream.aclose()  # type: ignore[attr-defined]

    async def _pump(self, stream: AsyncIterator[Any], on: Any) -> None:
        async for resp in stream:
            for ev in resp.events:
                if ev.type == UPSERT:
                    on(ev)
        raise Unavailable("a drainer stream ended")

    def _on_node(self, ev: Any) -> None:
        n = ev.node
        if n.HasField("drain_strategy") or n.id in self._nodes:
            self._kick.set()

    def _on_alloc(self, ev: Any) -> None:
        a = ev.allocation
        if a.node_id in self._nodes or (a.namespace, a.job_id) in self._jobs:
            self._kick.set()

    async def _passes(self, term: Term) -> None:
        cfg = self.config
        wake: float | None = None
        while True:
            delay = cfg.max_sleep if wake is None else max(0.0, wake - self._clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(delay, cfg.max_sleep)):
                    await self._kick.wait()
            self._kick.clear()
            if self.guard.alive():
                p = await self.pass_once(term)
                wake = p.next_deadline
            await asyncio.sleep(cfg.batch_interval)

    # -- one pass ---------------------------------------------------------------

    async def pass_once(self, term: Term) -> DrainPass:
        """Read, decide, write (fenced). Returns the decision."""
        nodes = await self.state.list_draining_nodes()
        self._nodes = {n.id for n in nodes}
        if not nodes:
            self._jobs = set()
            return DrainPass()
        keys: set[JobKey] = set()
        for n in nodes:
            for a in await self.state.allocations_where(f'node_id == "{n.id}"'):
                keys.add((a.namespace, a.job_id))
        self._jobs = keys
        jobs: dict[JobKey, job_pb2.Job | None] = {}
        allocs: dict[JobKey, list[allocation_pb2.Allocation]] = {}
        for ns, job_id in sorted(keys):
            jobs[(ns, job_id)] = await self.state.get_job(ns, job_id)
            allocs[(ns, job_id)] = [a for a in await self.state.allocations_where(
                f'job_id == "{job_id}"') if a.namespace == ns]
        p = decide(self._clock(), nodes, jobs, allocs)
        self.stats.passes += 1
        await self._write_marks(term, p, jobs)
        for c in p.complete:
            self.guard.check()
            try:
                await self.state.update_node_drain(state_pb2.UpdateNodeDrainRequest(
                    id=c.node_id, complete=True, deadlined=c.deadlined), term.fence)
            except FenceLost as err:
                term.report_lost(f"drain completion: {err.message}")
                raise
            except (Conflict, NotFound) as err:
                log.info("drain of %s not completed now: %s", c.node_id, err)
                continue
            self.stats.completed += 1
            self.stats.writes += 1
            log.info("node %s: drain complete%s", c.node_id,
                     " (deadline reached)" if c.deadlined else "")
        return p

    async def _write_marks(self, term: Term, p: DrainPass,
                           jobs: dict[JobKey, job_pb2.Job | None]) -> None:
        batch = state_pb2.UpdateAllocDesiredTransitionRequest()
        for key, marked in sorted(p.migrate.items()):
            for chunk in _chunks(marked, MAX_BATCH - 1):
                if len(batch.allocations) + len(batch.evaluations) + len(chunk) + 1 > MAX_BATCH:
                    await self._send(term, batch)
                    batch = state_pb2.UpdateAllocDesiredTransitionRequest()
                # Nomad's drainAllocs: a batch job's allocation is stopped and
                # not replaced (MigrateDisablePlacement).
                job = jobs.get(key)
                stay = job is not None and job.type == job_pb2.JOB_TYPE_BATCH
                for a in chunk:
                    t = batch.allocations.add(namespace=a.namespace, id=a.id).transition
                    t.migrate = True
                    if stay:
                        t.migrate_disable_placement = True
                batch.evaluations.append(self._evaluation(key, jobs.get(key)))
        if batch.allocations:
            await self._send(term, batch)

    async def _send(self, term: Term, batch: state_pb2.UpdateAllocDesiredTransitionRequest) -> None:
        self.guard.check()
        try:
            await self.state.update_alloc_desired_transition(batch, term.fence)
        except FenceLost as err:
            term.report_lost(f"migrate marks: {err.message}")
            raise
        except (Conflict, NotFound) as err:  # decided on stale reads: the next pass decides anew
            log.info("drain marks dropped (%s); deciding again", err)
            self._kick.set()
            return
        self.stats.marked += len(batch.allocations)
        self.stats.writes += 1

    def _evaluation(self, key: JobKey, job: job_pb2.Job | None) -> evaluation_pb2.Evaluation:
        now = self._clock()
        ev = evaluation_pb2.Evaluation(
            id=self._new_id(), namespace=key[0], job_id=key[1], triggered_by=TRIGGER,
            type=_JOB_TYPES.get(job.type, "service") if job is not None else "service",
            priority=job.priority if job is not None and job.priority else 50,
            status=evaluation_pb2.EVALUATION_STATUS_PENDING,
            job_modify_index=job.job_modify_index if job is not None else 0)
        ev.create_time.FromNanoseconds(int(now * 1e9))
        return ev


def _chunks(items: Sequence[Any], n: int) -> list[Sequence[Any]]:
    return [items[i:i + n] for i in range(0, len(items), n)]

"""The watcher leader: the async shell around :class:`~.core.manager.WatcherManager`;
this module is its ingesting half (sessions, streams, tracking, timers,
manual calls), :mod:`.results` its writing half.

Leader only: a :class:`~drover.coord.LeaderComponent`. ``establish`` starts a
*session* for the term and returns once it has listed the active
deployments (step 2 below), not tracked them all: a million allocations'
restore outlasts any establish deadline (Nomad's watcher, too, loads its
deployments after leadership). Manual operations wait for the restore
(``ready``); ``revoke`` cancels everything (bounded) and fails waiting calls.

A session (the Nomad #10756 lesson, by construction):

1. opens exactly two subscriptions on the state service, deployments and
   allocations, "from now", and waits for their first message so both are
   registered before anything is read;
2. lists the running and paused deployments with a consistent read, the
   barrier: the state replica first catches up with etcd's last object
   write (all written before this replica won, ``term.won_at_revision``);
3. tracks each listed deployment (its job versions and allocations, read
   once) while the streams already run: events of a deployment being tracked
   are buffered and replayed after, older versions than those listed are
   ignored (indexes compared): nothing in between is missed or rolled back.

From then on the only state traffic is the two streams, the writes, two reads
per *newly seen* deployment and :mod:`.audit`'s periodic list: the number of
watches and queries does not depend on how many deployments are active. A
stream that fails (state replica gone, INDEX_COMPACTED, SUBSCRIBER_TOO_SLOW)
ends the session and a new one rebuilds from scratch.

Leader only, checked synchronously: every steering call (right before its
decision is taken), every write (right before it leaves) and every timer
pass asks the :class:`~drover.coord.guard.LeaderGuard` whether the term is provably
alive by the lease clock. Revocation is asynchronous; a process frozen past
its lease and woken acts on nothing before it steps down.

Writes: each deployment has one worker that applies its decisions in order
(:mod:`.core.requests`, fenced UpdateDeployment), at most one write in flight per
deployment and any number across deployments. A follow-up evaluation is
part of the decision whose deployment change needs it, so it is created in
that same UpdateDeployment txn (nothing waits in memory to be lost with a
broken stream); only a follow-up with no change to ride on would leave in a
batch (UpsertEvaluations, fenced). A FENCE_LOST answer ends the term at
once (``term.report_lost``). A conflict (another writer changed the
deployment) drops its watcher and queued decisions and tracks it again from
state; a steering call caught in one is decided again on the re-read
deployment (bounded: :meth:`WatcherLeader.operate`). Own writes coming
back on the stream are recognised and not fed to the watcher again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2
from drover.coord.guard import LeaderGuard
from drover.coord.term import Term
from drover.deployments.config import LeaderConfig
from drover.errors import Conflict, NotLeader, Unavailable
from drover.tasks import cancel_and_wait

from .audit import audit
from .core.effects import Decision
from .core.manager import AllocationChange, WatcherManager, WatcherStats
from .core.requests import echo_key
from .core.walltime import WallClock
from .core.watcher import ACTIVE
from .errors import DeploymentNotActive, DeploymentNotFound
from .gc import GarbageCollector, GcPassResult
from .leader_session import Result, Session
from .results import ResultWriter
from .state_api import StateApi

log = logging.getLogger(__name__)

UPSERT = state_pb2.EVENT_TYPE_UPSERT


@dataclass(frozen=True)
class LeaderStats:
    leader: bool
    watchers: WatcherStats | None
    state_writes: int


class WatcherLeader:
    def __init__(self, state: StateApi, service: str = "deployments", *,
                 clock: WallClock = time.time, config: LeaderConfig,
                 new_id: Callable[[], str], gc: GarbageCollector | None = None) -> None:
        """``new_id`` names the evaluations the watchers ask for."""
        self.state = state
        self.gc = gc  # garbage collection runs with the leader, when given
        self.service = service
        self._clock = clock
        self._new_id = new_id
        self.config = config
        self._run: Session | None = None
        self._writes_before = 0
        self.guard = LeaderGuard(service)
        self.writer = ResultWriter(state, service, clock, self._check, self._start_tracking,
                                   self.config.batcher)

    # -- LeaderComponent ------------------------------------------------------

    async def establish(self, term: Term) -> None:
        run = Session(term, WatcherManager(self._clock, self.config.batcher,
                                                 new_id=self._new_id))
        self._run = run
        self.guard.enable(term)
        run.task = term.spawn(self._main(run), name="deployment-watcher")
        if self.gc is not None:
            # GC writes are leader writes: each step first asks the guard
            # whether the lease is provably alive (and is fenced besides).
            term.spawn(self.gc.loop(term.fence, self._gc_may_act(term)), name="gc")
        async with asyncio.timeout(self.config.restore_timeout):
            await run.listed.wait()
        log.info("deployment watcher leading (term %d): %d active deployments to restore",
                 term.revision, len(run.stored))

    async def revoke(self) -> None:
        self.guard.disable()
        run, self._run = self._run, None
        if run is None:
            return
        self._writes_before += run.writes
        await cancel_and_wait((run.task,), within=self.config.stop_timeout,
                              what=f"{self.service} revoke")
        self.writer.fail_pending(run, NotLeader(self.service, None))
        run.manager.clear()

    @property
    def leading(self) -> bool:
        return self._run is not None and self.guard.alive()

    def _check(self, run: Session) -> None:
        """Leader only, synchronously: the caller acts before its next await."""
        if run is not self._run:
            raise NotLeader(self.service, None)
        self.guard.check()

    def stats(self) -> LeaderStats:
        run = self._run
        if run is None:
            return LeaderStats(False, None, self._writes_before)
        return LeaderStats(self.leading, run.manager.stats(), self._writes_before + run.writes)

    # -- sessions -------------------------------------------------------------

    async def _main(self, run: Session) -> None:
        while True:
            try:
                await self._session(run)
            except Exception as err:  # a stream or read failed: rebuild from state
                log.warning("deployment watcher resyncing after: %r", err)
            run.listed.clear()
            run.ready.clear()
            run.manager.clear()
            run.tracking.clear()
            run.track_tasks.clear()
            await asyncio.sleep(self.config.resync_backoff)

    async def _session(self, run: Session) -> None:
        deployments = self.state.subscribe(state_pb2.TOPIC_DEPLOYMENT, 0)
        allocations = self.state.subscribe(state_pb2.TOPIC_ALLOCATION, 0)
        try:
            await anext(deployments)
            await anext(allocations)
            listed, _ = await self.state.list_active_deployments()
            run.stored = {d.id: d for d in listed}
            for d in listed:
                run.tracking[d.id] = []
            run.listed.set()
            async with asyncio.TaskGroup() as tg:
                run.tg = tg
                tg.create_task(self._pump_deployments(run, deployments))
                tg.create_task(self._pump_allocations(run, allocations))
                tg.create_task(self._timer(run))
                tg.create_task(self._restore(run, [d.id for d in listed]))
                tg.create_task(audit(run, self.state, self.config, self._start_tracking))
        finally:
            run.tg = None
            for stream in (deployments, allocations):
                with contextlib.suppress(Exception):
                    await stream.aclose()  # type: ignore[attr-defined]

    async def _restore(self, run: Session, ids: Sequence[str]) -> None:
        limit = asyncio.Semaphore(self.config.track_concurrency)

        async def one(deployment_id: str) -> None:
            async with limit:
                await self._track(run, deployment_id)

        await asyncio.gather(*(one(i) for i in ids))
        run.ready.set()
        run.kick.set()
        log.info("deployment watcher (term %d): %d deployments restored",
                 run.term.revision, len(run.manager.tracked()))

    async def _track(self, run: Session, deployment_id: str) -> None:
        """Read what a new watcher needs, then replay what arrived meanwhile."""
        run.tracking.setdefault(deployment_id, [])
        try:
            d = run.stored.get(deployment_id)
            if d is None:
                return
            versions, allocs = await self.state.deployment_reads(d.namespace, d.job_id,
                                                                 deployment_id)
            d = run.stored.get(deployment_id)
            if d is None or not run.manager.wants(d):
                return
            try:
                self.writer.submit(run, run.manager.track(d, versions, allocs))
            except ValueError as err:  # e.g. its job version was purged
                log.warning("cannot watch deployment %s: %s", deployment_id, err)
                return
        finally:
            buffered = run.tracking.pop(deployment_id, [])
            run.track_tasks.pop(deployment_id, None)
        self._on_allocations(run, buffered)
        run.kick.set()

    def _start_tracking(self, run: Session, deployment_id: str) -> asyncio.Task[None] | None:
        task = run.track_tasks.get(deployment_id)
        if task is None and run.tg is not None and deployment_id not in run.tracking:
            run.tracking[deployment_id] = []
            task = run.tg.create_task(self._track(run, deployment_id))
            run.track_tasks[deployment_id] = task
        return task

    # -- streams --------------------------------------------------------------

    async def _pump_deployments(self, run: Session, stream: Any) -> None:
        async for resp in stream:
            for ev in resp.events:
                if ev.type == UPSERT:
                    self._on_deployment(run, ev.deployment)
                else:
                    run.stored.pop(ev.key, None)
                    run.manager.untrack(ev.key)
        raise Unavailable("the deployment stream ended")

    def _on_deployment(self, run: Session, d: deployment_pb2.Deployment) -> None:
        known = run.stored.get(d.id)
        if known is not None and d.modify_index <= known.modify_index:
            return  # older than what we hold (e.g. our own write's echo)
        active = d.status in ACTIVE
        if active or d.id in run.tracking or d.id in run.manager.tracked():
            run.stored[d.id] = d
        echoes = run.echoes.get(d.id)
        key = echo_key(d) if echoes else b""
        if echoes and key in echoes:
            echoes.remove(key)  # our own write: the watcher already holds it
        elif d.id in run.tracking:
            pass  # the tracking task reads run.stored when it is done
        elif run.manager.wants(d):
            self._start_tracking(run, d.id)
        else:
            self.writer.submit(run, run.manager.on_deployment(d))
        if not active:
            run.stored.pop(d.id, None)
            run.echoes.pop(d.id, None)

    async def _pump_allocations(self, run: Session, stream: Any) -> None:
        async for resp in stream:
            self._on_allocations(run, [
                (False, ev.allocation) if ev.type == UPSERT else (True, ev.key)
                for ev in resp.events
            ])
        raise Unavailable("the allocation stream ended")

    def _on_allocations(self, run: Session, changes: Sequence[AllocationChange]) -> None:
        """One stream response's changes, taken by the watchers; each woken
        one steps once per tick for all of its allocations (Nomad's watcher
        takes a blocking query's allocations as one batch too), not once per
        allocation. A change for a deployment still being read is held for
        its replay; a deletion names no deployment, so every such replay
        holds it too."""
        now: list[AllocationChange] = []
        for deleted, payload in changes:
            if deleted:
                for pending in run.tracking.values():
                    pending.append((True, payload))
                now.append((True, payload))
            elif (buffer := run.tracking.get(payload.deployment_id)) is not None:
                buffer.append((False, payload))
            else:
                now.append((False, payload))
        run.manager.take_allocations(now)
        if not run.step_due:
            # The woken watchers step once per tick, however many responses
            # arrive meanwhile (a wave of client reports is many).
            run.step_due = True
            asyncio.get_running_loop().call_later(self.config.min_tick, self._step_woken, run)

    def _step_woken(self, run: Session) -> None:
        run.step_due = False
        if self._run is run:  # else the term ended: its successor restores from state
            for decision in run.manager.step_woken():
                self.writer.submit(run, decision)

    # -- timers: deadlines and evaluation batches -------------------------------

    async def _timer(self, run: Session) -> None:
        cfg = self.config
        while True:
            wake = run.manager.next_wakeup()
            delay = cfg.max_sleep if wake is None else max(0.0, wake - self._clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(delay, cfg.max_sleep)):
                    await run.kick.wait()
            run.kick.clear()
            if not self.guard.alive():
                # Past the lease clock: decide nothing; revocation is coming.
                await asyncio.sleep(cfg.min_tick)
                continue
            for decision in run.manager.check_deadlines():
                self.writer.submit(run, decision)
            while self.guard.alive() and (batch := run.manager.flush_evaluations()):
                await self.writer.write_evaluations(run, batch)
            await asyncio.sleep(cfg.min_tick)

    # -- manual operations ------------------------------------------------------

    async def operate(self, namespace: str, deployment_id: str,
                      op: Callable[[WatcherManager], Decision]) -> Result:
        """Run a manual operation on the deployment's watcher; wait for its write.

        A steering call names no index of its own, so a conflict its write
        meets is drover's own writers racing (the watcher writing the same
        deployment, a scheduler's allocations): the writer re-read the
        deployment (:meth:`.results.ResultWriter._decide_again`) and the
        operation is decided again on it, ``conflict_attempts`` times in
        all; past that the call is UNAVAILABLE (retry), never CONFLICT."""
        run = self._session_for_call()
        attempts = self.config.conflict_attempts
        async with asyncio.timeout(self.config.call_timeout):
            await run.ready.wait()
            for attempt in range(1, attempts + 1):
                await self._ensure_watched(run, namespace, deployment_id)
                self._check(run)
                decision = op(run.manager)
                waiter: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
                self.writer.submit(run, decision, waiter)
                try:
                    return await waiter
                except Conflict as err:
                    log.info("deployment %s changed under a call (attempt %d of %d): %s",
                             deployment_id, attempt, attempts, err.message)
            raise Unavailable(f"deployment {deployment_id} kept changing during {attempts} "
                              "attempts; retry the call")

    async def collect_garbage(self, force: bool) -> GcPassResult:
        """A GC pass now (leader only), fenced with this term."""
        run = self._session_for_call()
        if self.gc is None:
            raise Unavailable("garbage collection is not configured on this replica")
        term = run.term
        return await self.gc.run_pass(term.fence, force=force, service=self.service,
                                      still_leading=self._gc_may_act(term))

    def _gc_may_act(self, term: Term) -> Callable[[], bool]:
        return lambda: not term.ended and self.guard.term is term and self.guard.alive()

    def _session_for_call(self) -> Session:
        run = self._run
        if run is None or run.term.ended:
            raise NotLeader(self.service, None)
        return run

    async def _ensure_watched(self, run: Session, namespace: str, deployment_id: str) -> None:
        if deployment_id not in run.manager.tracked():
            task = run.track_tasks.get(deployment_id)
            if task is None:
                d = await self.state.get_deployment(namespace, deployment_id)
                if d is None:
                    raise DeploymentNotFound(
                        f"deployment {deployment_id} not found in namespace"
                        f" {namespace or 'default'}",
                        metadata={"deployment_id": deployment_id})
                if d.status not in ACTIVE:
                    status = deployment_pb2.DeploymentStatus.Name(d.status)
                    raise DeploymentNotActive(
                        f"deployment {deployment_id} is not active ({status})",
                        metadata={"status": status})
                run.stored.setdefault(d.id, d)
                task = self._start_tracking(run, deployment_id)
            if task is not None:
                await asyncio.shield(task)
        watched = run.manager.watcher(deployment_id)  # DeploymentNotFound if still not
        if namespace and watched.deployment.namespace != namespace:
            raise DeploymentNotFound(
                f"deployment {deployment_id} not found in namespace {namespace}",
                metadata={"deployment_id": deployment_id})

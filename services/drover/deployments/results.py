"""Writing results: the deployment-watcher leader's write half.

Leader only. Each deployment has one worker that applies its decisions in
order (:mod:`.core.requests`, fenced UpdateDeployment): at most one write in
flight per deployment, any number across deployments; the decisions queued
behind it meanwhile go out merged, in one write (:mod:`.core.coalesce`). A
decision that only moves counts, or asks only for the next batch besides,
waits up to its window for more to merge with (:func:`.core.coalesce.hold_for`),
and leaves at once when one that cannot wait arrives. A follow-up
evaluation with no deployment change to ride on leaves in a batch
(UpsertEvaluations, fenced). A FENCE_LOST answer ends the term at once
(``term.report_lost``). A conflict (another writer changed the deployment),
or a write whose replica went away (UNAVAILABLE: applied or not, nobody
knows; the watcher already adopted the decision), drops its watcher and
queued decisions and has the ingesting half (:mod:`.leader`) track it again
from state, re-read until a replica answers (issue 41: a lost "successful"
left a deployment running forever); only then are the callers
waiting on them told (CONFLICT), and :meth:`.leader.WatcherLeader.operate`
decides their calls again on the re-read deployment: a conflict between
drover's own writers never reaches a user. Unhealthy allocations marked to
reschedule go after the deployment's write, with their evaluation, in
UpdateAllocDesiredTransition (fenced, the node drainer's call); a conflict
there (an allocation changed meanwhile) re-tracks the deployment as well,
so the marks are decided again on fresh allocations. Every write first asks the
leader's ``check`` (is this session current, is the lease provably alive),
synchronously, right before it leaves.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2
from drover.errors import Conflict, FenceLost, NotLeader, Unavailable

from .config import BatcherConfig
from .core.coalesce import hold_for, merge
from .core.effects import CreateEvaluation, Decision, RescheduleAllocs
from .core.requests import build_request, echo_key, result, written
from .core.walltime import WallClock
from .core.watcher import ACTIVE
from .errors import DeploymentNotFound
from .leader_session import Job, Result, Session
from .state_api import StateApi

log = logging.getLogger(__name__)

#: Allocations per UpdateAllocDesiredTransition, with room for the
#: evaluation (etcd's default txn cap, as the node drainer's batches).
MAX_MARKS = 119
#: Seconds between re-reads of a deployment whose write failed while no
#: state replica answers them.
REREAD_BACKOFF = 0.5


def _coalesce(queue: collections.deque[Job]) -> None:
    """Merge the decisions queued behind the head into it, while no caller
    waits on either (a steering call's answer is its own write) and they
    merge (:mod:`.core.coalesce`): one write instead of one per decision."""
    while len(queue) > 1 and queue[0][1] is None and queue[1][1] is None:
        merged = merge(queue[0][0], queue[1][0])
        if merged is None:
            return
        queue.popleft()
        queue[0] = (merged, None)


class ResultWriter:
    """The write half of one leader (see the module docstring)."""

    def __init__(self, state: StateApi, service: str, clock: WallClock,
                 check: Callable[[Session], None],
                 retrack: Callable[[Session, str], Any],
                 batching: BatcherConfig) -> None:
        self.state = state
        self.service = service
        self._clock = clock
        self._batching = batching
        self._check = check  # raises NotLeader unless leading, synchronously
        self._retrack = retrack  # track a deployment again from state

    async def write_evaluations(self, run: Session, batch: Sequence[CreateEvaluation]) -> None:
        now = self._clock()
        try:
            self._check(run)
            await self.state.upsert_evaluations([e.to_proto(now) for e in batch],
                                                run.term.fence)
            run.writes += 1
        except FenceLost as err:
            run.term.report_lost(f"evaluation write: {err.message}")
            raise
        except Exception as err:  # the deployments still progress on their next event
            log.warning("dropped %d follow-up evaluations: %r", len(batch), err)

    def submit(self, run: Session, decision: Decision | None,
                waiter: asyncio.Future[Result] | None = None) -> None:
        if decision is None or (decision.empty and waiter is None):
            return
        run.kick.set()
        queue = run.queues.get(decision.deployment_id)
        if queue is None:
            queue = run.queues[decision.deployment_id] = collections.deque()
            run.term.spawn(self._worker(run, decision.deployment_id, queue),
                           name=f"deployment-writer-{decision.deployment_id}")
        queue.append((decision, waiter))
        if (arrived := run.arrivals.get(decision.deployment_id)) is not None:
            arrived.set()

    async def _worker(self, run: Session, deployment_id: str,
                      queue: collections.deque[Job]) -> None:
        loop = asyncio.get_running_loop()
        held_since: float | None = None
        try:
            while queue:
                _coalesce(queue)
                decision, waiter = queue[0]
                hold = hold_for(decision, self._batching) if waiter is None else 0.0
                if len(queue) == 1 and hold > 0:
                    now = loop.time()
                    held_since = now if held_since is None else held_since
                    if (wait := held_since + hold - now) > 0:
                        await self._next_arrival(run, deployment_id, wait)
                        continue
                held_since = None
                try:
                    res = await self._write(run, decision)
                except Exception as err:
                    if waiter is None:
                        log.warning("write for deployment %s failed: %r", deployment_id, err)
                    elif not waiter.done():
                        waiter.set_exception(err)
                else:
                    if waiter is not None and not waiter.done():
                        waiter.set_result(res)
                if queue:
                    queue.popleft()
        finally:
            if run.queues.get(deployment_id) is queue:
                del run.queues[deployment_id]
            run.arrivals.pop(deployment_id, None)

    @staticmethod
    async def _next_arrival(run: Session, deployment_id: str, within: float) -> None:
        """Until the next decision for the deployment is queued, at most ``within`` s."""
        arrived = run.arrivals.setdefault(deployment_id, asyncio.Event())
        arrived.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await arrived.wait()

    async def _write(self, run: Session, decision: Decision) -> Result:
        marks = decision.reschedule
        if marks is None:
            return await self._write_deployment(run, decision)
        # The marks rest on the allocations, not on the deployment's value:
        # they are written even when the deployment's write failed.
        failed: Exception | None = None
        try:
            res = await self._write_deployment(run, dataclasses.replace(decision,
                                                                        reschedule=None))
        except NotLeader:
            raise
        except Exception as err:
            failed = err
        await self._write_marks(run, decision.deployment_id, marks)
        if failed is not None:
            raise failed
        return res

    async def _write_marks(self, run: Session, deployment_id: str,
                           marks: RescheduleAllocs) -> None:
        """The marks and their evaluation (in the last of txn-sized chunks)."""
        ids = marks.alloc_ids
        for start in range(0, len(ids), MAX_MARKS):
            req = state_pb2.UpdateAllocDesiredTransitionRequest()
            for alloc_id in ids[start:start + MAX_MARKS]:
                req.allocations.add(namespace=marks.namespace,
                                    id=alloc_id).transition.reschedule = True
            if start + MAX_MARKS >= len(ids):
                req.evaluations.append(marks.evaluation.to_proto(self._clock()))
            try:
                self._check(run)
                await self.state.update_alloc_desired_transition(req, run.term.fence)
            except FenceLost as err:
                run.term.report_lost(f"reschedule marks: {err.message}")
                raise NotLeader(self.service, None) from err
            except Exception as err:  # conflict, gone, or unknown: decide again
                log.info("reschedule marks of deployment %s dropped (%r); re-reading",
                         deployment_id, err)
                stored = run.stored.get(deployment_id)
                if stored is not None:
                    with contextlib.suppress(Exception):
                        await self._decide_again(run, stored)
                return
            run.writes += 1

    async def _write_deployment(self, run: Session, decision: Decision) -> Result:
        d_id = decision.deployment_id
        stored = run.stored.get(d_id)
        if stored is None:
            raise DeploymentNotFound(f"deployment {d_id} is no longer watched")
        if decision.empty:
            return result(state_pb2.UpdateDeploymentRequest(), None, stored)
        req = build_request(stored, decision, self._clock())
        key = echo_key(req.deployment)
        echoes = run.echoes.setdefault(d_id, collections.deque(maxlen=8))
        echoes.append(key)
        try:
            self._check(run)
            resp = await self.state.update_deployment(req, run.term.fence)
        except FenceLost as err:
            run.term.report_lost(f"deployment write: {err.message}")
            raise NotLeader(self.service, None) from err
        except Conflict as err:
            await self._decide_again(run, stored)
            raise Conflict(f"deployment {d_id} changed concurrently; it was re-read") from err
        except NotLeader:
            raise
        except Unavailable:
            # The replica went away before or after applying it (outcome
            # unknown): the watcher already adopted the decision, so it is
            # decided again from what state holds, or it is lost for good
            # (a lost "successful" left the deployment running forever).
            await self._decide_again(run, stored)
            raise
        finally:
            with contextlib.suppress(ValueError):
                echoes.remove(key)
        run.writes += 1
        new = written(req, resp.index)
        current = run.stored.get(d_id)
        if current is None or current.modify_index < new.modify_index:
            if new.status in ACTIVE:
                run.stored[d_id] = new
            else:
                run.stored.pop(d_id, None)
        return result(req, resp, new)

    async def _decide_again(self, run: Session, stale: deployment_pb2.Deployment) -> None:
        """Drop the watcher and its queued decisions; track it again from
        state, then tell the queued callers (their calls are decided again
        on what is tracked now). The re-read is retried until a replica
        answers or the session ends: a deployment dropped here and never
        tracked again would stay active with nothing steering it."""
        queue = run.queues.get(stale.id)
        dropped = []
        if queue is not None:
            dropped = [w for _, w in list(queue)[1:] if w is not None]
            while len(queue) > 1:
                queue.pop()
        run.manager.untrack(stale.id)
        try:
            fresh = await self._reread(run, stale)
            run.stored.pop(stale.id, None)
            if fresh is not None and fresh.status in ACTIVE:
                run.stored[stale.id] = fresh
                self._retrack(run, stale.id)
        finally:
            for waiter in dropped:
                if not waiter.done():
                    waiter.set_exception(Conflict(f"deployment {stale.id} changed concurrently"))

    async def _reread(self, run: Session,
                      stale: deployment_pb2.Deployment) -> deployment_pb2.Deployment | None:
        """The deployment as state holds it, asked again every
        :data:`REREAD_BACKOFF` seconds while no replica answers (the
        session's leader ``check`` ends it: NotLeader)."""
        while True:
            self._check(run)
            try:
                return await self.state.get_deployment(stale.namespace, stale.id)
            except NotLeader:
                raise
            except Unavailable as err:
                log.info("re-reading deployment %s: %r; retrying", stale.id, err)
            await asyncio.sleep(REREAD_BACKOFF)

    def fail_pending(self, run: Session, err: Exception) -> None:
        for queue in run.queues.values():
            for _, waiter in queue:
                if waiter is not None and not waiter.done():
                    waiter.set_exception(err)

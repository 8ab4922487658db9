"""All watchers of the leader: tracking, routing, deadlines, batching, stats.

The shell owns two subscriptions (deployments, allocations) and calls in:

- ``track(deployment, job_versions, allocs)`` for an active deployment that
  :meth:`WatcherManager.wants` (on restore after winning the election, and
  when the deployment stream shows a new one); ``on_deployment`` for every
  later deployment event, which drops watchers of terminal deployments;
- ``take_allocations`` for each response of the allocation stream and
  ``step_woken`` once per tick (``on_allocations`` does both;
  ``on_allocation`` / ``on_allocation_deleted`` one change): the
  :class:`~.router.AllocRouter` wakes only the owning watcher, which takes
  all of its changes of the tick before it steps, once;
- ``check_deadlines`` and ``flush_evaluations`` when ``next_wakeup`` comes;
- the manual operations, which raise :mod:`..errors` classes.

Every call returns :class:`~.effects.Decision` values for the shell to write
(leader fence on each). A follow-up evaluation rides in the decision whose
deployment change needs it (moved to ``Decision.evaluation``), so the shell
writes both in one UpdateDeployment, one etcd txn, as Nomad does: no
follow-up waits in memory for a later write that a broken stream or a
failover would lose. (A follow-up with no deployment change to carry it,
which the watcher does not produce today, still goes through the
:class:`~.batcher.EvalBatcher` and ``flush_evaluations``.) A burst of
progress therefore writes one evaluation per progress write rather than one
per batching window; the broker keeps one evaluation per job in flight and
cancels the older pending ones. On losing leadership the shell calls
:meth:`WatcherManager.clear`; the next leader rebuilds from state.

A decision that ends a deployment (failed, successful) drops its watcher at
once. If the shell's write of it then fails (a conflict, or UNAVAILABLE with
its outcome unknown), it re-reads the deployment: still active, so
:meth:`WatcherManager.wants` it and ``track`` re-derives the same decision
from state. Writes must be applied in the order
decisions were returned; each carries the new values, not deltas.

Time comes from the injected wall clock (epoch seconds, see the package
docstring), so tests run the whole thing on a virtual clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.deployments.config import BatcherConfig

from ..errors import DeploymentNotFound
from .batcher import EvalBatcher
from .effects import CreateEvaluation, Decision
from .router import AllocRouter
from .walltime import WallClock
from .watcher import ACTIVE, DeploymentWatcher

SUBSCRIPTIONS = 2
"""Deployment and allocation streams: constant however many deployments run."""

AllocationChange = tuple[bool, Any]
"""``(False, Allocation)`` for an upsert, ``(True, allocation id)`` for a deletion."""


@dataclass(frozen=True)
class WatcherStats:
    active_watchers: int
    subscriptions: int
    wakeups: int
    ignored_alloc_updates: int
    evaluations_created: int
    evaluations_coalesced: int
    evaluation_batches: int
    pending_evaluations: int
    # Decided this term: canary groups promoted, deployments failed/succeeded.
    promotions: int = 0
    failures: int = 0
    successes: int = 0


class WatcherManager:
    def __init__(self, clock: WallClock, batcher: BatcherConfig, *,
                 new_id: Callable[[], str]) -> None:
        """``new_id`` names every evaluation a watcher asks for."""
        self._clock = clock
        self._new_id = new_id
        self._watchers: dict[str, DeploymentWatcher] = {}
        self._router = AllocRouter()
        # Watchers that took allocation changes and have not stepped since.
        self._woken: dict[str, DeploymentWatcher] = {}
        self._batcher = EvalBatcher(batcher)
        self._immediate_evals = 0
        self._promoted: set[tuple[str, str]] = set()
        self._promotions = 0
        self._outcomes = {deployment_pb2.DEPLOYMENT_STATUS_FAILED: 0,
                          deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL: 0}

    # -- tracking ----------------------------------------------------------

    def wants(self, deployment: deployment_pb2.Deployment) -> bool:
        """True for an active deployment without a watcher: the shell should track it."""
        return deployment.status in ACTIVE and deployment.id not in self._watchers

    def track(
        self,
        deployment: deployment_pb2.Deployment,
        job_versions: Sequence[job_pb2.Job],
        allocs: Iterable[allocation_pb2.Allocation] = (),
    ) -> Decision:
        """Start watching ``deployment``; ``allocs`` are all its allocations."""
        if deployment.status not in ACTIVE:
            self.untrack(deployment.id)
            return Decision(deployment.id)
        allocs = list(allocs)
        watcher = DeploymentWatcher(deployment, job_versions, allocs)
        self.untrack(deployment.id)
        self._watchers[deployment.id] = watcher
        self._router.watch(deployment.id, allocs)
        return self._after(watcher, watcher.reconcile(self._clock()))

    def untrack(self, deployment_id: str) -> None:
        self._watchers.pop(deployment_id, None)
        self._router.unwatch(deployment_id)
        self._batcher.discard(deployment_id)
        self._promoted = {k for k in self._promoted if k[0] != deployment_id}

    def clear(self) -> None:
        """Forget every watcher (leadership lost)."""
        for deployment_id in list(self._watchers):
            self.untrack(deployment_id)

    def tracked(self) -> frozenset[str]:
        return frozenset(self._watchers)

    def watcher(self, deployment_id: str) -> DeploymentWatcher:
        watcher = self._watchers.get(deployment_id)
        if watcher is None:
            raise DeploymentNotFound(
                f"deployment {deployment_id} is not watched (unknown or not active)",
                metadata={"deployment_id": deployment_id},
            )
        return watcher

    # -- streams -----------------------------------------------------------

    def on_deployment(self, deployment: deployment_pb2.Deployment) -> Decision:
        watcher = self._watchers.get(deployment.id)
        if watcher is None:
            return Decision(deployment.id)
        if deployment.status not in ACTIVE:
            self.untrack(deployment.id)
            return Decision(deployment.id)
        return self._after(watcher, watcher.observe_deployment(deployment, self._clock()))

    def on_allocation(self, alloc: allocation_pb2.Allocation) -> Decision | None:
        """The owning watcher's decision, or None when nobody was woken."""
        owner = self._router.route(alloc)
        if owner is None:
            return None
        watcher = self._watchers[owner]
        return self._after(watcher, watcher.on_alloc(alloc, self._clock()))

    def on_allocations(self, changes: Iterable[AllocationChange]) -> list[Decision]:
        """:meth:`take_allocations`, then :meth:`step_woken`."""
        self.take_allocations(changes)
        return self.step_woken()

    def take_allocations(self, changes: Iterable[AllocationChange]) -> None:
        """Changes in stream order, taken by their watchers without a step;
        the woken ones step at the next :meth:`step_woken`, once each, so a
        burst of N allocation updates of one deployment costs one step
        rather than N (each step recounts all of its allocations). The
        decision is the one the last per-change step would have made: steps
        re-derive everything from the allocations."""
        woken = self._woken
        for deleted, payload in changes:
            if deleted:
                owner = self._router.route_deleted(str(payload))
            else:
                owner = self._router.route(payload)
            if owner is None:
                continue
            watcher = self._watchers[owner]
            taken = (watcher.forget_alloc(str(payload)) if deleted
                     else watcher.take_alloc(payload))
            if taken:
                woken[owner] = watcher

    def step_woken(self) -> list[Decision]:
        """Each watcher woken since the last call steps once (in the order
        they were first woken): their decisions."""
        woken, self._woken = self._woken, {}
        now = self._clock()
        return [self._after(w, w.reconcile(now)) for w in woken.values()
                if self._watchers.get(w.deployment_id) is w]

    def on_allocation_deleted(self, alloc_id: str) -> Decision | None:
        owner = self._router.route_deleted(alloc_id)
        if owner is None:
            return None
        watcher = self._watchers[owner]
        return self._after(watcher, watcher.on_alloc_removed(alloc_id, self._clock()))

    # -- timers ------------------------------------------------------------

    def next_wakeup(self) -> float | None:
        """The earliest progress deadline or batch due time, for the shell's sleep."""
        times = [
            t for w in self._watchers.values() if (t := w.earliest_deadline()) is not None
        ]
        if (due := self._batcher.next_due()) is not None:
            times.append(due)
        return min(times) if times else None

    def check_deadlines(self) -> list[Decision]:
        now = self._clock()
        decisions = []
        for watcher in list(self._watchers.values()):
            decision = watcher.check_deadline(now)
            if not decision.empty:
                decisions.append(self._after(watcher, decision))
        return decisions

    def flush_evaluations(self) -> tuple[CreateEvaluation, ...]:
        """One batch of follow-up evaluations, if the batching window has closed."""
        return self._batcher.flush_due(self._clock())

    # -- manual operations ---------------------------------------------------

    def promote(self, deployment_id: str, groups: Sequence[str] | None = None) -> Decision:
        watcher = self.watcher(deployment_id)
        return self._after(watcher, watcher.promote(groups, self._clock()))

    def pause(self, deployment_id: str, pause: bool) -> Decision:
        watcher = self.watcher(deployment_id)
        return self._after(watcher, watcher.pause(pause, self._clock()))

    def fail(self, deployment_id: str) -> Decision:
        watcher = self.watcher(deployment_id)
        return self._after(watcher, watcher.fail(self._clock()))

    def set_alloc_health(
        self, deployment_id: str, healthy_ids: Sequence[str], unhealthy_ids: Sequence[str]
    ) -> Decision:
        watcher = self.watcher(deployment_id)
        decision = watcher.set_alloc_health(healthy_ids, unhealthy_ids, self._clock())
        return self._after(watcher, decision)

    # -- stats -------------------------------------------------------------

    def stats(self) -> WatcherStats:
        router, batcher = self._router.stats(), self._batcher.stats()
        return WatcherStats(
            active_watchers=len(self._watchers),
            subscriptions=SUBSCRIPTIONS,
            wakeups=router.wakeups,
            ignored_alloc_updates=router.ignored,
            evaluations_created=self._immediate_evals + batcher.flushed,
            evaluations_coalesced=batcher.coalesced,
            evaluation_batches=batcher.batches,
            pending_evaluations=batcher.pending,
            promotions=self._promotions,
            failures=self._outcomes[deployment_pb2.DEPLOYMENT_STATUS_FAILED],
            successes=self._outcomes[deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL],
        )

    def wakeups(self, deployment_id: str) -> int:
        return self._router.wakeups(deployment_id)

    # -- internals ---------------------------------------------------------

    def _names_given(self, decision: Decision) -> Decision:
        """``decision`` with every evaluation it asks for named."""
        reschedule = decision.reschedule
        if reschedule is not None and not reschedule.evaluation.id:
            reschedule = dataclasses.replace(reschedule, evaluation=dataclasses.replace(
                reschedule.evaluation, id=self._new_id()))
        return dataclasses.replace(decision, evaluation=self._named(decision.evaluation),
                                   follow_up=self._named(decision.follow_up),
                                   reschedule=reschedule)

    def _named(self, evaluation: CreateEvaluation | None) -> CreateEvaluation | None:
        if evaluation is None or evaluation.id:
            return evaluation
        return dataclasses.replace(evaluation, id=self._new_id())

    def _after(self, watcher: DeploymentWatcher, decision: Decision) -> Decision:
        """Attach the follow-up to its write, count evaluations, drop finished watchers."""
        decision = self._names_given(decision)
        if (decision.follow_up is not None and decision.update is not None
                and decision.evaluation is None):
            # Written with the deployment change that needs it (one txn).
            decision = dataclasses.replace(decision, evaluation=decision.follow_up,
                                           follow_up=None, evaluation_follows_up=True)
        if decision.evaluation is not None:
            self._immediate_evals += 1
        if decision.reschedule is not None:
            self._immediate_evals += 1  # written with the reschedule marks
        update = decision.update
        if update is not None:
            for group in update.groups:
                key = (update.deployment_id, group.name)
                if group.promoted and key not in self._promoted:
                    self._promoted.add(key)
                    self._promotions += 1
            if update.status in self._outcomes:
                self._outcomes[update.status] += 1
        if decision.follow_up is not None:
            self._batcher.add(decision.follow_up, self._clock())
            decision = dataclasses.replace(decision, follow_up=None)
        if not watcher.active:
            self.untrack(watcher.deployment_id)
        return decision

"""A whole canary deployment driven by the pure core alone, on a virtual clock.

A fake state store applies the manager's decisions (and echoes them back, as
the deployment stream would); a fake scheduler answers each evaluation by
placing the next batch: never more than ``max_parallel`` allocations in
flight, canaries first, the rest only after promotion. Nothing here sleeps.
"""

from __future__ import annotations

from deployments_builders import RUNNING, SUCCESSFUL, T0, G, alloc, deployment, eval_ids, job
from virtual_clock import VirtualClock

from drover.api.types.v1 import allocation_pb2, deployment_pb2
from drover.deployments.config import BatcherConfig
from drover.deployments.core.effects import CreateEvaluation, Decision, MarkJobStable, apply_update
from drover.deployments.core.manager import WatcherManager


class World:
    def __init__(self, clock: VirtualClock, manager: WatcherManager, group: G) -> None:
        self.clock, self.manager, self.group = clock, manager, group
        self.stored = deployment(groups={"web": group})
        self.allocs: dict[str, allocation_pb2.Allocation] = {}
        self.evaluations: list[CreateEvaluation] = []
        self.flushed = 0
        self.stable: list[MarkJobStable] = []
        self.writes = 0

    def apply(self, decision: Decision | None) -> None:
        if decision is None:
            return
        assert decision.revert is None and decision.follow_up is None
        if decision.update is not None:
            assert decision.update.based_on_modify_index == self.stored.modify_index
            self.stored = apply_update(self.stored, decision.update)
            self.stored.modify_index += 1
            self.writes += 1
            # The deployment stream echoes our own write: nothing new to decide.
            assert self.manager.on_deployment(self.stored).empty
        if decision.evaluation is not None:
            self.evaluations.append(decision.evaluation)
        if decision.mark_stable is not None:
            self.stable.append(decision.mark_stable)

    def place(self, n: int, *, canary: bool) -> list[str]:
        ids = []
        for _ in range(n):
            alloc_id = f"{'c' if canary else 'a'}{len(self.allocs) + 1}"
            self.allocs[alloc_id] = alloc(alloc_id, canary=canary)
            self.apply(self.manager.on_allocation(self.allocs[alloc_id]))
            ids.append(alloc_id)
        return ids

    def become_healthy(self, alloc_id: str) -> None:
        a = self.allocs[alloc_id]
        a.deployment_status.healthy = True
        a.modify_index += 1
        self.apply(self.manager.on_allocation(a))

    def schedule(self) -> list[str]:
        """The scheduler's answer to an evaluation: the next batch, if allowed."""
        state = self.stored.task_groups["web"]
        in_flight = sum(1 for a in self.allocs.values() if not a.deployment_status.healthy)
        room = self.group.max_parallel - in_flight
        if not state.promoted:
            return self.place(min(room, state.desired_canaries - state.placed_allocs), canary=True)
        return self.place(min(room, state.desired_total - state.placed_allocs), canary=False)

    def flush(self) -> list[CreateEvaluation]:
        """The follow-ups written since the last call (each with its deployment
        write); none waits in the manager's memory."""
        assert self.manager.check_deadlines() == []
        assert self.manager.flush_evaluations() == ()
        batch, self.flushed = self.evaluations[self.flushed:], len(self.evaluations)
        return batch


def test_canary_deployment_from_first_canary_to_stable_job() -> None:
    clock = VirtualClock(T0)
    manager = WatcherManager(clock, BatcherConfig(), new_id=eval_ids())
    group = G(total=5, canaries=1, auto_promote=True, max_parallel=2, progress_deadline=600)
    world = World(clock, manager, group)
    world.apply(manager.track(world.stored, [job(2, groups={"web": group})]))

    # The job registration's evaluation places the canary.
    assert world.schedule() == ["c1"]
    assert world.stored.task_groups["web"].placed_canaries == ["c1"]
    assert world.stored.task_groups["web"].HasField("require_progress_by")

    # Healthy canary → auto-promotion → one follow-up, written with the promotion.
    clock.advance(30)
    world.become_healthy("c1")
    assert world.stored.task_groups["web"].promoted
    assert world.stored.status == RUNNING
    assert [e.deployment_id for e in world.flush()] == ["d1"]

    # Batches of max_parallel: the scheduler never has more than 2 in flight.
    assert world.schedule() == ["a2", "a3"]
    assert world.schedule() == []  # an extra evaluation would place nothing now
    clock.advance(20)
    world.become_healthy("a2")
    world.become_healthy("a3")  # each progress write carries its own follow-up
    assert len(world.flush()) == 2
    assert world.schedule() == ["a4", "a5"]
    clock.advance(20)
    world.become_healthy("a4")
    assert world.flush() == []  # all five placed: nothing left for a scheduler
    assert manager.tracked() == frozenset({"d1"})
    world.become_healthy("a5")

    # Every allocation healthy and the canary promoted: done.
    assert world.stored.status == SUCCESSFUL
    assert world.stored.status_description == "Deployment completed successfully"
    assert world.stable == [MarkJobStable("default", "shop", 2)]
    assert manager.tracked() == frozenset()
    assert manager.next_wakeup() is None
    state = world.stored.task_groups["web"]
    assert (state.placed_allocs, state.healthy_allocs, state.unhealthy_allocs) == (5, 5, 0)
    stats = manager.stats()
    # promotion, a2, a3 (a4 once all were placed, a5 completed: no follow-up)
    assert stats.evaluations_created == 3
    assert stats.evaluations_coalesced == 0
    assert stats.wakeups == 10  # 5 placements + 5 health changes, nothing else
    assert world.writes == 10  # one write per wakeup (promotion rides along), none for echoes


def test_a_canary_that_goes_unhealthy_reverts_the_job() -> None:
    clock = VirtualClock(T0)
    manager = WatcherManager(clock, BatcherConfig(), new_id=eval_ids())
    group = G(total=3, canaries=1, auto_promote=True, auto_revert=True)
    versions = [job(2, groups={"web": group}),
                job(1, stable=True, image="web:1", groups={"web": group})]
    manager.track(deployment(groups={"web": group}), versions)
    manager.on_allocation(alloc("c1", canary=True))
    clock.advance(5)
    d = manager.on_allocation(alloc("c1", canary=True, healthy=False))
    assert d is not None and d.update is not None
    assert d.update.status == deployment_pb2.DEPLOYMENT_STATUS_FAILED
    assert d.revert is not None and d.revert.to_version == 1
    assert d.revert.job.task_groups[0].tasks[0].config["image"] == "web:1"
    assert manager.tracked() == frozenset()

"""The node drainer's shell (:mod:`drover.deployments.drainer`) on a fake
state service: one pass reads, decides, and writes fenced: marks with one
``node-drain`` evaluation per job in one call, then the completions; a
FENCE_LOST ends the term."""

from __future__ import annotations

from typing import Any

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.coord.fence import Fence
from drover.coord.term import Term
from drover.deployments.config import DrainerConfig
from drover.deployments.drainer import NodeDrainer
from drover.errors import FenceLost

NOW = 10_000.0


class FakeState:
    def __init__(self, nodes: list[node_pb2.Node], allocs: list[allocation_pb2.Allocation],
                 jobs: dict[str, job_pb2.Job]) -> None:
        self.nodes, self.allocs, self.jobs = nodes, allocs, jobs
        self.marks: list[tuple[state_pb2.UpdateAllocDesiredTransitionRequest, Fence]] = []
        self.drains: list[tuple[state_pb2.UpdateNodeDrainRequest, Fence]] = []
        self.lose_fence = False

    def subscribe(self, topic: int, from_index: int) -> Any:
        raise NotImplementedError

    async def list_draining_nodes(self) -> list[node_pb2.Node]:
        return [n for n in self.nodes if n.drain]

    async def allocations_where(self, filter_: str) -> list[allocation_pb2.Allocation]:
        field, _, value = filter_.partition(" == ")
        return [a for a in self.allocs if getattr(a, field) == value.strip('"')]

    async def get_job(self, namespace: str, job_id: str) -> job_pb2.Job | None:
        return self.jobs.get(job_id)

    async def update_alloc_desired_transition(
            self, request: state_pb2.UpdateAllocDesiredTransitionRequest, fence: Fence) -> int:
        if self.lose_fence:
            raise FenceLost("fence lost")
        self.marks.append((request, fence))
        return 1

    async def update_node_drain(self, request: state_pb2.UpdateNodeDrainRequest,
                                fence: Fence) -> int:
        self.drains.append((request, fence))
        return 1


class LostScope:
    ended = False
    lost: list[str] = []

    def spawn(self, coro: Any, *, name: str | None = None) -> Any:
        coro.close()

    def report_lost(self, reason: str) -> None:
        self.lost.append(reason)


def _setup() -> tuple[FakeState, NodeDrainer, Term]:
    n0 = node_pb2.Node(id="n0", drain=True)
    n0.drain_strategy.deadline.FromSeconds(3600)
    n0.drain_strategy.force_deadline.FromSeconds(int(NOW) + 3600)
    empty = node_pb2.Node(id="n9", drain=True)
    empty.drain_strategy.deadline.FromSeconds(3600)
    empty.drain_strategy.force_deadline.FromSeconds(int(NOW) + 3600)
    allocs = []
    for i in range(3):
        a = allocation_pb2.Allocation(
            id=f"a{i}", namespace="default", job_id="web", task_group="g", name=f"web.g[{i}]",
            node_id="n0", desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
            client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)
        a.deployment_status.healthy = True
        allocs.append(a)
    job = job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      priority=70, task_groups=[job_pb2.TaskGroup(name="g", count=3)])
    state = FakeState([n0, empty], allocs, {"web": job})
    drainer = NodeDrainer(state, clock=lambda: NOW, config=DrainerConfig(), new_id=lambda: "ev-1")
    term = Term("deployments", "/drover/v1/election/deployments/x", 7, 7, "a:1",
                scope=LostScope())  # type: ignore[arg-type]
    drainer.guard.enable(term)
    return state, drainer, term


async def test_one_pass_marks_fenced_with_one_evaluation_per_job_and_completes_empty_nodes(
        ) -> None:
    state, drainer, term = _setup()
    p = await drainer.pass_once(term)
    assert p.marked == 1
    ((req, fence),) = state.marks
    assert fence == term.fence
    assert [a.id for a in req.allocations] == ["a0"] and req.allocations[0].transition.migrate
    assert not req.allocations[0].transition.migrate_disable_placement  # a service's is replaced
    (ev,) = req.evaluations
    assert (ev.triggered_by, ev.job_id, ev.priority, ev.type) == (
        "node-drain", "web", 70, "service")
    ((done, fence),) = state.drains
    assert (done.id, done.complete, fence) == ("n9", True, term.fence)


async def test_a_batch_jobs_allocations_are_marked_not_to_be_replaced() -> None:
    """Nomad's ``drainAllocs``: a batch job's allocation is marked
    ``MigrateDisablePlacement`` with ``Migrate`` (stopped, not replaced; an
    ``alloc stop`` marks ``Migrate`` alone and is replaced)."""
    state, drainer, term = _setup()
    state.jobs["web"].type = job_pb2.JOB_TYPE_BATCH
    state.nodes[0].drain_strategy.force_deadline.FromSeconds(int(NOW) - 1)  # batch: at the deadline
    await drainer.pass_once(term)
    ((req, _),) = state.marks
    assert len(req.allocations) == 3
    assert all(m.transition.migrate and m.transition.migrate_disable_placement
               for m in req.allocations)


async def test_a_lost_fence_ends_the_term() -> None:
    state, drainer, term = _setup()
    state.lose_fence = True
    with pytest.raises(FenceLost):
        await drainer.pass_once(term)
    assert term.scope.lost  # type: ignore[union-attr]

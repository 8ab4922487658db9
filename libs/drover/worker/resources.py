"""Resource arithmetic shared by the planner, the state service's plan check
and the simulated nodes (pure).

A task that leaves its resources out (or sets 0) asks for Nomad's defaults:
100 MHz of CPU and 300 MB of memory. An allocation reserves the sum of its
task group's tasks. A node whose resources are unset offers nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from drover.api.types.v1 import allocation_pb2, job_pb2

DEFAULT_CPU_MHZ = 100
DEFAULT_MEMORY_MB = 300

_RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
_TERMINAL_CLIENT = frozenset({
    allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
    allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
    allocation_pb2.ALLOC_CLIENT_STATUS_LOST,
})


@dataclass(frozen=True, slots=True)
class Vec:
    """CPU (MHz) and memory (MB)."""

    cpu: int = 0
    memory_mb: int = 0

    def __add__(self, other: Vec) -> Vec:
        return Vec(self.cpu + other.cpu, self.memory_mb + other.memory_mb)

    def __sub__(self, other: Vec) -> Vec:
        return Vec(self.cpu - other.cpu, self.memory_mb - other.memory_mb)

    def fits_in(self, capacity: Vec) -> bool:
        return self.cpu <= capacity.cpu and self.memory_mb <= capacity.memory_mb

    def proto(self) -> job_pb2.Resources:
        return job_pb2.Resources(cpu=self.cpu, memory_mb=self.memory_mb)

    @staticmethod
    def of(res: job_pb2.Resources) -> Vec:
        return Vec(res.cpu, res.memory_mb)


def fill_defaults(job: job_pb2.Job) -> None:
    """Give every task that left them out Nomad's default resources (in place)."""
    for tg in job.task_groups:
        for task in tg.tasks:
            if task.resources.cpu <= 0:
                task.resources.cpu = DEFAULT_CPU_MHZ
            if task.resources.memory_mb <= 0:
                task.resources.memory_mb = DEFAULT_MEMORY_MB


def group_ask(tg: job_pb2.TaskGroup) -> Vec:
    """What one allocation of ``tg`` reserves (defaults for unset fields; a
    group without tasks still reserves one default task, so it is placed
    somewhere real)."""
    total = Vec()
    for task in tg.tasks or [job_pb2.Task()]:
        total += Vec(task.resources.cpu or DEFAULT_CPU_MHZ,
                     task.resources.memory_mb or DEFAULT_MEMORY_MB)
    return total


def is_live(alloc: allocation_pb2.Allocation) -> bool:
    """Desired to run and not terminal on the client: it holds resources."""
    return alloc.desired_status == _RUN and alloc.client_status not in _TERMINAL_CLIENT


def used(allocs: Iterable[allocation_pb2.Allocation]) -> Vec:
    """What the live ones among ``allocs`` reserve."""
    total = Vec()
    for a in allocs:
        if is_live(a):
            total += Vec.of(a.resources)
    return total

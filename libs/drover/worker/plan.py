"""A plan and the snapshot it is computed from (pure data).

:class:`Snapshot` is what :func:`drover.worker.planner.compute_plan` reads
(the job, its versions, its latest deployment, its allocations, the nodes
and what every node already reserves); :class:`Plan` is what it returns and
the worker submits: placements, stops and in-place updates, what fit
nowhere, and the evaluations written with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from drover.api.types.v1 import allocation_pb2, deployment_pb2, evaluation_pb2, job_pb2, node_pb2

from .resources import Vec


@dataclass(frozen=True)
class Snapshot:
    """What one plan is computed from (copies are not taken: do not mutate)."""

    namespace: str
    job_id: str
    job: job_pb2.Job | None
    versions: Mapping[int, job_pb2.Job]
    deployment: deployment_pb2.Deployment | None
    allocs: Sequence[allocation_pb2.Allocation]
    nodes: Sequence[node_pb2.Node]
    #: Per node id: what its live allocations (of every job) reserve.
    node_used: Mapping[str, Vec]
    eval_id: str = ""
    #: Wall-clock seconds the plan is computed at (reschedule delays count on it).
    now: float = 0.0


@dataclass
class Plan:
    placements: list[allocation_pb2.Allocation] = field(default_factory=list)
    #: Stops and in-place updates: the whole new value of existing allocations.
    updates: list[allocation_pb2.Allocation] = field(default_factory=list)
    #: Per task group: allocations that fit on no node.
    queued: dict[str, int] = field(default_factory=dict)
    #: More work than fit in this plan: evaluate again.
    more: bool = False
    #: Evaluations written with the plan (reschedules due later).
    evaluations: list[evaluation_pb2.Evaluation] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.placements and not self.updates and not self.evaluations

    def node_ids(self) -> set[str]:
        return {a.node_id for a in self.placements}

    def objects(self) -> int:
        """What the plan writes in its txn: its allocations and one usage
        record per node it touches (the state service's rule)."""
        nodes = {a.node_id for a in self.placements} | {a.node_id for a in self.updates}
        return len(self.placements) + len(self.updates) + len(nodes)

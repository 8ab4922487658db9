"""What the watcher core asks its shell to do, as frozen dataclasses.

The core never writes: every decision comes back as a :class:`Decision`
bundling the effects that belong in one fenced state write (Nomad applies a
status change, its evaluation and a job revert in one Raft entry; drover's
shell writes them in one request). Updates carry the *new values* of the
fields the watcher owns, not deltas, so applying one twice is harmless and a
shell that lost a compare can re-read, feed the watcher, and write again.

``follow_up`` is the one effect that is not written with the rest: it is a
request for a "place the next batch" evaluation that the manager hands to the
:class:`~.batcher.EvalBatcher`, which coalesces it per deployment and writes
many deployments' evaluations together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.api.types.v1 import deployment_pb2, evaluation_pb2, job_pb2

from .walltime import to_timestamp

TRIGGERED_BY = "deployment-watcher"


@dataclass(frozen=True)
class GroupUpdate:
    """The watcher-owned fields of one task group, as they should now be."""

    name: str
    placed_allocs: int
    placed_canaries: tuple[str, ...]
    healthy_allocs: int
    unhealthy_allocs: int
    promoted: bool
    require_progress_by: float | None  # None clears the deadline


@dataclass(frozen=True)
class DeploymentUpdate:
    """New status/description and changed groups of one deployment.

    ``based_on_modify_index`` is the deployment index the decision was taken
    on, for a shell that wants an optimistic compare. ``counts_only``: the
    status, its description and every group's promotion are as stored; only
    counts and deadlines moved, which a new leader re-derives from the
    allocations (the first deadline from the first placement's create time),
    so such a write may wait (:mod:`.coalesce`).
    """

    deployment_id: str
    namespace: str
    status: deployment_pb2.DeploymentStatus
    description: str
    groups: tuple[GroupUpdate, ...] = ()
    based_on_modify_index: int = 0
    counts_only: bool = False


@dataclass(frozen=True)
class CreateEvaluation:
    """An evaluation so the scheduler acts on the deployment's job."""

    namespace: str
    job_id: str
    deployment_id: str
    priority: int
    type: str
    job_modify_index: int
    triggered_by: str = TRIGGERED_BY
    # Empty until the manager names it with the id source it is handed.
    id: str = ""

    def to_proto(self, now: float) -> evaluation_pb2.Evaluation:
        return evaluation_pb2.Evaluation(
            id=self.id,
            namespace=self.namespace,
            priority=self.priority,
            type=self.type,
            triggered_by=self.triggered_by,
            job_id=self.job_id,
            job_modify_index=self.job_modify_index,
            deployment_id=self.deployment_id,
            status=evaluation_pb2.EVALUATION_STATUS_PENDING,
            create_time=to_timestamp(now),
            modify_time=to_timestamp(now),
        )


@dataclass(frozen=True)
class RevertJob:
    """Register ``job`` (the spec of stable version ``to_version``) again.

    ``expected_job_modify_index`` is the job's index when the deployment
    failed: register with ``enforce_index`` so a job the user changed in the
    meantime is not overwritten by the revert.
    """

    namespace: str
    job_id: str
    to_version: int
    expected_job_modify_index: int
    job: job_pb2.Job = field(compare=False, repr=False, default_factory=job_pb2.Job)


@dataclass(frozen=True)
class MarkJobStable:
    namespace: str
    job_id: str
    version: int


@dataclass(frozen=True)
class UpdateAllocHealth:
    """Set the deployment health of allocations (SetAllocHealth)."""

    namespace: str
    healthy_ids: tuple[str, ...]
    unhealthy_ids: tuple[str, ...]
    timestamp: float


@dataclass(frozen=True)
class RescheduleAllocs:
    """Mark unhealthy allocations ``desired_transition.reschedule`` with the
    evaluation that has the scheduler replace them (Nomad's
    ``allowReplacements``), written together by UpdateAllocDesiredTransition
    after the deployment's own write."""

    namespace: str
    alloc_ids: tuple[str, ...]
    evaluation: CreateEvaluation


@dataclass(frozen=True)
class Decision:
    """Everything one watcher step wants written; empty when nothing changed."""

    deployment_id: str
    update: DeploymentUpdate | None = None
    evaluation: CreateEvaluation | None = None
    revert: RevertJob | None = None
    mark_stable: MarkJobStable | None = None
    alloc_health: UpdateAllocHealth | None = None
    follow_up: CreateEvaluation | None = None
    reschedule: RescheduleAllocs | None = None
    #: ``evaluation`` is a follow-up riding with its progress write (the
    #: manager moved it there), not one a caller or a status change needs now.
    evaluation_follows_up: bool = False

    @property
    def empty(self) -> bool:
        return (
            self.update is None
            and self.evaluation is None
            and self.revert is None
            and self.mark_stable is None
            and self.alloc_health is None
            and self.follow_up is None
            and self.reschedule is None
        )


def apply_update(
    deployment: deployment_pb2.Deployment, update: DeploymentUpdate
) -> deployment_pb2.Deployment:
    """A copy of ``deployment`` with ``update`` applied (for the shell's write)."""
    out = deployment_pb2.Deployment()
    out.CopyFrom(deployment)
    out.status = update.status
    out.status_description = update.description
    for g in update.groups:
        state = out.task_groups[g.name]
        state.placed_allocs = g.placed_allocs
        del state.placed_canaries[:]
        state.placed_canaries.extend(g.placed_canaries)
        state.healthy_allocs = g.healthy_allocs
        state.unhealthy_allocs = g.unhealthy_allocs
        state.promoted = g.promoted
        if g.require_progress_by is None:
            state.ClearField("require_progress_by")
        else:
            state.require_progress_by.CopyFrom(to_timestamp(g.require_progress_by))
    return out

"""One deployment's watcher: its decisions, automatic and manual.

A watcher holds the deployment as last stored (plus its own decisions, applied
locally at once so the next step builds on them), the allocations of the
deployment, and the job's version history. Each step recomputes the group
counts from the allocations (:mod:`.accounting`), moves the deadlines with
the one rule in :mod:`.deadline`, and decides, in this order:

1. an unhealthy allocation fails the deployment (running or paused) when
   Nomad's shouldFailEarly says so (:mod:`.fail_early`: no progress
   deadline, or its reschedule policy spent), with an auto-revert when its
   group asks for one (:mod:`.revert`); otherwise it is replaced and the
   progress deadline decides: one that still runs unhealthy is marked
   ``desired_transition.reschedule`` with an evaluation
   (:mod:`.replacements`, Nomad's allowReplacements), once;
2. canaries are auto-promoted when every unpromoted canary group has
   ``auto_promote`` and all its canaries are placed and healthy;
3. every group healthy at its desired total (and promoted where it has
   canaries) makes the deployment successful and the job version stable;
4. otherwise newly healthy allocations in a group whose rollout may proceed
   and still has allocations to place (or an auto-promotion) ask for a
   follow-up evaluation, which the manager batches. Promotion, success and
   follow-ups happen only while running. Once a group's placed allocations
   reach its desired total, every old one has been stopped in the plan
   that placed its replacement, so more health changes nothing the
   scheduler would do: Nomad's watcher still asks (batched per job per
   second) and its scheduler finds no work; here no evaluation is made.

Manual operations (promote, pause/resume, fail, set_alloc_health) validate
first and raise :mod:`..errors` classes; their decisions carry an immediate
evaluation so the caller's response can name it.

Steps are idempotent: a redelivered allocation or an echo of our own write
yields an empty :class:`~.effects.Decision`. Not thread-safe; the shell calls
it from one task.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2

from ..errors import (
    AllocationNotInDeployment,
    CanariesUnhealthy,
    DeploymentNotActive,
    InvalidAllocHealth,
    NoCanaries,
    UnknownTaskGroup,
)
from .accounting import (
    GroupTally,
    deployment_complete,
    has_canaries,
    promotion_done,
    tally,
)
from .deadline import (
    ProgressEvent,
    deadline_missed,
    earliest_deadline,
    first_placement_at,
    next_progress_deadline,
)
from .effects import (
    CreateEvaluation,
    Decision,
    DeploymentUpdate,
    GroupUpdate,
    MarkJobStable,
    RescheduleAllocs,
    RevertJob,
    UpdateAllocHealth,
)
from .fail_early import failing_groups
from .replacements import to_reschedule
from .revert import choose_revert
from .walltime import from_timestamp, to_timestamp

RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
PAUSED = deployment_pb2.DEPLOYMENT_STATUS_PAUSED
FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED
SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
ACTIVE = frozenset({RUNNING, PAUSED})

DESC_RUNNING = "Deployment is running"
DESC_PAUSED = "Deployment is paused"
DESC_SUCCESSFUL = "Deployment completed successfully"
DESC_UNHEALTHY = "Failed due to unhealthy allocations"
DESC_DEADLINE = "Failed due to progress deadline"
DESC_MANUAL_FAIL = "Deployment marked as failed"

_JOB_TYPES = {
    job_pb2.JOB_TYPE_SERVICE: "service",
    job_pb2.JOB_TYPE_BATCH: "batch",
    job_pb2.JOB_TYPE_SYSTEM: "system",
}


class _Eval(enum.Enum):
    NONE = "none"
    FOLLOW_UP = "follow-up"  # batched by the manager
    IMMEDIATE = "immediate"  # written with the decision


def _copy(deployment: deployment_pb2.Deployment) -> deployment_pb2.Deployment:
    out = deployment_pb2.Deployment()
    out.CopyFrom(deployment)
    return out


def _set_deadline(group: deployment_pb2.DeploymentGroupState, at: float | None) -> None:
    if at is None:
        group.ClearField("require_progress_by")
    else:
        group.require_progress_by.CopyFrom(to_timestamp(at))


def _counts_only(update: GroupUpdate, before: deployment_pb2.DeploymentGroupState) -> bool:
    """The group's change moves only counts or its deadline, not its
    promotion. The first deadline counts too: it is armed from the first
    placement's time as the allocations record it (:func:`.first_placement_at`),
    so a new leader arms the same one."""
    return update.promoted == before.promoted


def _group_update(name: str, g: deployment_pb2.DeploymentGroupState) -> GroupUpdate:
    return GroupUpdate(
        name=name,
        placed_allocs=g.placed_allocs,
        placed_canaries=tuple(g.placed_canaries),
        healthy_allocs=g.healthy_allocs,
        unhealthy_allocs=g.unhealthy_allocs,
        promoted=g.promoted,
        require_progress_by=from_timestamp(g.require_progress_by),
    )


def _promoted_canaries(work: deployment_pb2.Deployment) -> frozenset[str]:
    """Canaries of promoted groups: still canaries to the count, though the
    state service cleared their flag (accounting module doc)."""
    return frozenset(
        alloc_id for g in work.task_groups.values() if g.promoted for alloc_id in g.placed_canaries
    )


class DeploymentWatcher:
    def __init__(
        self,
        deployment: deployment_pb2.Deployment,
        job_versions: Sequence[job_pb2.Job],
        allocs: Iterable[allocation_pb2.Allocation] = (),
    ) -> None:
        self._deployment = _copy(deployment)
        self._versions = tuple(job_versions)
        job = next((j for j in self._versions if j.version == deployment.job_version), None)
        if job is None:
            raise ValueError(
                f"job versions of deployment {deployment.id} lack its version"
                f" {deployment.job_version}"
            )
        self._job = job
        self._allocs: dict[str, allocation_pb2.Allocation] = {}
        self._marked: set[str] = set()  # marked to reschedule by this watcher
        for alloc in allocs:
            if alloc.deployment_id == deployment.id:
                self._allocs[alloc.id] = self._own(alloc)

    # -- reading -----------------------------------------------------------

    @property
    def deployment_id(self) -> str:
        return self._deployment.id

    @property
    def active(self) -> bool:
        return self._deployment.status in ACTIVE

    @property
    def deployment(self) -> deployment_pb2.Deployment:
        """A copy of the deployment as this watcher believes it to be."""
        return _copy(self._deployment)

    def earliest_deadline(self) -> float | None:
        """When a progress deadline could next fire (no copy: the shell's timer
        asks every watcher on each tick)."""
        return earliest_deadline(self._deployment)

    def allocation_ids(self) -> frozenset[str]:
        return frozenset(self._allocs)

    # -- automatic steps ---------------------------------------------------

    def observe_deployment(self, deployment: deployment_pb2.Deployment, now: float) -> Decision:
        """A stored version of the deployment arrived (the stream, or a re-read)."""
        if deployment.modify_index and deployment.modify_index <= self._deployment.modify_index:
            return Decision(self.deployment_id)  # stale or already known
        self._deployment = _copy(deployment)
        return self.reconcile(now)

    def reconcile(self, now: float) -> Decision:
        """Re-derive everything from the current allocations (restore, re-read)."""
        if not self.active:
            return Decision(self.deployment_id)
        return self._step(_copy(self._deployment), now, _Eval.FOLLOW_UP)

    def on_alloc(self, alloc: allocation_pb2.Allocation, now: float) -> Decision:
        if not self.take_alloc(alloc):
            return Decision(self.deployment_id)
        return self.reconcile(now)

    def on_alloc_removed(self, alloc_id: str, now: float) -> Decision:
        if not self.forget_alloc(alloc_id):
            return Decision(self.deployment_id)
        return self.reconcile(now)

    def take_alloc(self, alloc: allocation_pb2.Allocation) -> bool:
        """Hold the allocation's new version without stepping (the caller
        reconciles once for a batch); False if it is not this deployment's."""
        if alloc.deployment_id != self.deployment_id:
            return False
        self._allocs[alloc.id] = self._own(alloc)
        return True

    def forget_alloc(self, alloc_id: str) -> bool:
        """Drop a removed allocation without stepping; False if unknown."""
        self._marked.discard(alloc_id)
        return self._allocs.pop(alloc_id, None) is not None

    def check_deadline(self, now: float) -> Decision:
        group = deadline_missed(self._deployment, now)
        if group is None:
            return Decision(self.deployment_id)
        work = _copy(self._deployment)
        revert = work.task_groups[group].auto_revert
        return self._fail(work, f"{DESC_DEADLINE} of task group {group}", revert, _Eval.IMMEDIATE)

    # -- manual operations -------------------------------------------------

    def promote(self, groups: Sequence[str] | None, now: float) -> Decision:
        """Promote the canaries of ``groups`` (None or empty: every group)."""
        self._require_active()
        work = _copy(self._deployment)
        if groups:
            unknown = sorted(set(groups) - set(work.task_groups))
            if unknown:
                raise UnknownTaskGroup(
                    f"deployment {self.deployment_id} has no task group"
                    f" {', '.join(unknown)}",
                    metadata={"task_groups": ",".join(unknown)},
                )
        selected = sorted(set(groups) if groups else set(work.task_groups))
        canary_groups = [n for n in selected if has_canaries(work.task_groups[n])]
        if not canary_groups:
            raise NoCanaries(
                f"deployment {self.deployment_id} has no canaries to promote"
                f" in task group {', '.join(selected)}"
            )
        tallies = tally(self._allocs.values(), _promoted_canaries(work))
        pending = [n for n in canary_groups if not work.task_groups[n].promoted]
        short = []
        for name in pending:
            healthy = tallies.get(name, GroupTally()).healthy_canaries
            want = work.task_groups[name].desired_canaries
            if healthy < want:
                short.append((name, f"task group {name} has {healthy}/{want} healthy canaries"))
        if short:
            raise CanariesUnhealthy(
                "; ".join(message for _, message in short),
                metadata={"task_groups": ",".join(name for name, _ in short)},
            )
        self._promote(work, pending, now)
        return self._step(work, now, _Eval.IMMEDIATE)

    def pause(self, pause: bool, now: float) -> Decision:
        """Pause (no deadlines, no progress) or resume (deadlines restart, eval)."""
        self._require_active()
        work = _copy(self._deployment)
        if pause:
            work.status, work.status_description = PAUSED, DESC_PAUSED
            event = ProgressEvent.PAUSED
        else:
            work.status, work.status_description = RUNNING, DESC_RUNNING
            event = ProgressEvent.RESUMED
        if work.status != self._deployment.status:
            for group in work.task_groups.values():
                _set_deadline(group, next_progress_deadline(group, event, now))
        return self._step(work, now, _Eval.NONE if pause else _Eval.IMMEDIATE)

    def fail(self, now: float) -> Decision:
        """Fail by operator request; reverts if any group has auto_revert."""
        self._require_active()
        work = _copy(self._deployment)
        revert = any(g.auto_revert for g in work.task_groups.values())
        return self._fail(work, DESC_MANUAL_FAIL, revert, _Eval.IMMEDIATE)

    def set_alloc_health(
        self, healthy_ids: Sequence[str], unhealthy_ids: Sequence[str], now: float
    ) -> Decision:
        """Set allocations' health by operator request, then step as usual."""
        self._require_active()
        healthy = tuple(dict.fromkeys(healthy_ids))
        unhealthy = tuple(dict.fromkeys(unhealthy_ids))
        if not healthy and not unhealthy:
            raise InvalidAllocHealth("at least one healthy or unhealthy allocation id is required")
        both = sorted(set(healthy) & set(unhealthy))
        if both:
            raise InvalidAllocHealth(
                f"allocations marked both healthy and unhealthy: {', '.join(both)}",
                metadata={"allocation_ids": ",".join(both)},
            )
        foreign = sorted(i for i in (*healthy, *unhealthy) if i not in self._allocs)
        if foreign:
            raise AllocationNotInDeployment(
                f"allocations not in deployment {self.deployment_id}: {', '.join(foreign)}",
                metadata={"allocation_ids": ",".join(foreign)},
            )
        for ids, value in ((healthy, True), (unhealthy, False)):
            for alloc_id in ids:
                status = self._allocs[alloc_id].deployment_status
                status.healthy = value
                status.timestamp.CopyFrom(to_timestamp(now))
        effect = UpdateAllocHealth(self._deployment.namespace, healthy, unhealthy, now)
        return self._step(_copy(self._deployment), now, _Eval.IMMEDIATE, alloc_health=effect)

    # -- internals ---------------------------------------------------------

    def _step(
        self,
        work: deployment_pb2.Deployment,
        now: float,
        want_eval: _Eval,
        alloc_health: UpdateAllocHealth | None = None,
    ) -> Decision:
        tallies = tally(self._allocs.values(), _promoted_canaries(work))
        running = work.status == RUNNING
        progressed = False
        for name, group in work.task_groups.items():
            t = tallies.get(name, GroupTally())
            newly_healthy = t.healthy > group.healthy_allocs
            group.placed_allocs = t.placed
            del group.placed_canaries[:]
            group.placed_canaries.extend(t.canaries)
            group.healthy_allocs = t.healthy
            group.unhealthy_allocs = t.unhealthy
            if not running:
                continue  # a paused deployment has no deadline (RESUMED re-arms)
            if t.placed > 0:
                # Idempotent: arms the deadline only if it is not armed yet.
                at = first_placement_at(t.first_placed, from_timestamp(work.create_time), now)
                _set_deadline(group, next_progress_deadline(
                    group, ProgressEvent.FIRST_PLACEMENT, at))
            if newly_healthy:
                _set_deadline(group, next_progress_deadline(group, ProgressEvent.NEW_HEALTHY, now))
                progressed = progressed or (promotion_done(group)
                                            and t.live < group.desired_total)

        # Nomad's shouldFailEarly: else the scheduler replaces it and the
        # progress deadline decides.
        failing = failing_groups(work, self._allocs.values(), self._job,
                                 work.status in ACTIVE, now)
        if failing:
            revert = any(work.task_groups[n].auto_revert for n in failing)
            return self._fail(work, DESC_UNHEALTHY, revert, _Eval.IMMEDIATE, alloc_health)
        marks = self._replacements(work, now)

        if running:
            ready = self._auto_promotable(work, tallies)
            if ready:
                self._promote(work, ready, now)
                progressed = True
            if deployment_complete(work):
                work.status, work.status_description = SUCCESSFUL, DESC_SUCCESSFUL
                stable = MarkJobStable(self._job.namespace, self._job.id, self._job.version)
                return Decision(
                    self.deployment_id,
                    update=self._commit(work),
                    evaluation=self._new_eval() if want_eval is _Eval.IMMEDIATE else None,
                    mark_stable=stable,
                    alloc_health=alloc_health,
                    reschedule=marks,
                )
        update = self._commit(work)
        evaluation = follow_up = None
        if want_eval is _Eval.IMMEDIATE:
            evaluation = self._new_eval()
        elif want_eval is _Eval.FOLLOW_UP and progressed and running:
            follow_up = self._new_eval()
        return Decision(
            self.deployment_id,
            update=update,
            evaluation=evaluation,
            alloc_health=alloc_health,
            follow_up=follow_up,
            reschedule=marks,
        )

    def _fail(
        self,
        work: deployment_pb2.Deployment,
        description: str,
        revert_wanted: bool,
        want_eval: _Eval,
        alloc_health: UpdateAllocHealth | None = None,
    ) -> Decision:
        revert = None
        if revert_wanted:
            choice = choose_revert(self._job, self._versions, description)
            description = choice.description
            if choice.target is not None and choice.to_version is not None:
                revert = RevertJob(
                    namespace=self._job.namespace,
                    job_id=self._job.id,
                    to_version=choice.to_version,
                    expected_job_modify_index=self._job.job_modify_index,
                    job=choice.target,
                )
        work.status, work.status_description = FAILED, description
        return Decision(
            self.deployment_id,
            update=self._commit(work),
            evaluation=self._new_eval() if want_eval is not _Eval.NONE else None,
            revert=revert,
            alloc_health=alloc_health,
        )

    def _replacements(self, work: deployment_pb2.Deployment,
                      now: float) -> RescheduleAllocs | None:
        """Unhealthy allocations to mark for the scheduler to replace, once."""
        ids = to_reschedule(work, self._allocs.values(), self._job, self._marked, now)
        if not ids:
            return None
        self._marked.update(ids)
        return RescheduleAllocs(self._job.namespace or work.namespace, tuple(ids),
                                self._new_eval())

    @staticmethod
    def _auto_promotable(
        work: deployment_pb2.Deployment, tallies: dict[str, GroupTally]
    ) -> list[str]:
        """The canary groups to auto-promote now: all of them, or none."""
        pending = sorted(
            n for n, g in work.task_groups.items() if has_canaries(g) and not g.promoted
        )
        for name in pending:
            group, t = work.task_groups[name], tallies.get(name, GroupTally())
            if not group.auto_promote or t.healthy_canaries < group.desired_canaries:
                return []
        return pending

    @staticmethod
    def _promote(work: deployment_pb2.Deployment, names: Iterable[str], now: float) -> None:
        for name in names:
            group = work.task_groups[name]
            group.promoted = True
            if work.status == RUNNING:
                _set_deadline(group, next_progress_deadline(group, ProgressEvent.PROMOTED, now))

    def _commit(self, work: deployment_pb2.Deployment) -> DeploymentUpdate | None:
        """Adopt ``work`` locally; the update that turns the old state into it."""
        before, self._deployment = self._deployment, work
        groups = tuple(
            _group_update(name, g)
            for name, g in sorted(work.task_groups.items())
            if _group_update(name, g) != _group_update(name, before.task_groups[name])
        )
        if (
            not groups
            and work.status == before.status
            and work.status_description == before.status_description
        ):
            return None
        return DeploymentUpdate(
            deployment_id=work.id,
            namespace=work.namespace,
            status=work.status,
            description=work.status_description,
            groups=groups,
            based_on_modify_index=before.modify_index,
            counts_only=(work.status == before.status
                         and work.status_description == before.status_description
                         and all(_counts_only(g, before.task_groups[g.name])
                                 for g in groups)),
        )

    def _new_eval(self) -> CreateEvaluation:
        return CreateEvaluation(
            namespace=self._job.namespace or self._deployment.namespace,
            job_id=self._job.id or self._deployment.job_id,
            deployment_id=self.deployment_id,
            priority=self._job.priority or 50,
            type=_JOB_TYPES.get(self._job.type, "service"),
            job_modify_index=self._job.job_modify_index or self._deployment.job_modify_index,
        )

    def _require_active(self) -> None:
        if not self.active:
            status = deployment_pb2.DeploymentStatus.Name(self._deployment.status)
            raise DeploymentNotActive(
                f"deployment {self.deployment_id} is not active ({status})",
                metadata={"status": status},
            )

    @staticmethod
    def _own(alloc: allocation_pb2.Allocation) -> allocation_pb2.Allocation:
        copy = allocation_pb2.Allocation()
        copy.CopyFrom(alloc)
        return copy

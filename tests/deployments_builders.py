"""Builders and a virtual wall clock for the deployment watcher's unit tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2

T0 = 1_700_000_000.0  # a wall-clock epoch second, far from 0 so "unset" is distinct

RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
PAUSED = deployment_pb2.DEPLOYMENT_STATUS_PAUSED
FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED
SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
CANCELLED = deployment_pb2.DEPLOYMENT_STATUS_CANCELLED


@dataclass(frozen=True)
class G:
    """One task group of a test deployment."""

    total: int = 3
    canaries: int = 0
    auto_revert: bool = False
    auto_promote: bool = False
    progress_deadline: float = 600.0
    max_parallel: int = 1
    #: The group's reschedule block. By default none is allowed, so an
    #: unhealthy allocation fails the deployment at once (Nomad's
    #: shouldFailEarly); None: the service default (unlimited).
    reschedule: tuple[int, bool] | None = (0, False)  # (attempts, unlimited)


def job(
    version: int = 2,
    *,
    stable: bool = False,
    image: str = "web:2",
    groups: dict[str, G] | None = None,
    job_modify_index: int = 0,
) -> job_pb2.Job:
    groups = groups if groups is not None else {"web": G()}
    out = job_pb2.Job(
        id="shop",
        namespace="default",
        name="shop",
        type=job_pb2.JOB_TYPE_SERVICE,
        priority=70,
        version=version,
        stable=stable,
        job_modify_index=job_modify_index or 100 + version,
        modify_index=200 + version,
        create_index=10,
    )
    for name, g in groups.items():
        out.task_groups.add(
            name=name,
            count=g.total,
            update=job_pb2.UpdateStrategy(
                max_parallel=g.max_parallel,
                canary=g.canaries,
                progress_deadline=Duration(seconds=int(g.progress_deadline)),
                auto_revert=g.auto_revert,
                auto_promote=g.auto_promote,
            ),
            tasks=[job_pb2.Task(name="app", driver="docker", config={"image": image})],
        )
        if g.reschedule is not None:
            out.task_groups[-1].reschedule.attempts = g.reschedule[0]
            out.task_groups[-1].reschedule.unlimited = g.reschedule[1]
    return out


def deployment(
    deployment_id: str = "d1",
    *,
    job_version: int = 2,
    groups: dict[str, G] | None = None,
    status: deployment_pb2.DeploymentStatus = RUNNING,
    modify_index: int = 1,
) -> deployment_pb2.Deployment:
    groups = groups if groups is not None else {"web": G()}
    out = deployment_pb2.Deployment(
        id=deployment_id,
        namespace="default",
        job_id="shop",
        job_version=job_version,
        status=status,
        status_description="Deployment is running",
        modify_index=modify_index,
    )
    for name, g in groups.items():
        state = out.task_groups[name]
        state.desired_total = g.total
        state.desired_canaries = g.canaries
        state.auto_revert = g.auto_revert
        state.auto_promote = g.auto_promote
        state.progress_deadline.FromNanoseconds(int(g.progress_deadline * 1e9))
    return out


def alloc(
    alloc_id: str,
    *,
    deployment_id: str = "d1",
    group: str = "web",
    healthy: bool | None = None,
    canary: bool = False,
    client_status: allocation_pb2.AllocClientStatus = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
    modify_index: int = 1,
) -> allocation_pb2.Allocation:
    out = allocation_pb2.Allocation(
        id=alloc_id,
        namespace="default",
        job_id="shop",
        task_group=group,
        deployment_id=deployment_id,
        client_status=client_status,
        desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
        modify_index=modify_index,
    )
    out.deployment_status.canary = canary
    if healthy is not None:
        out.deployment_status.healthy = healthy
    return out


def eval_ids() -> Callable[[], str]:
    """An id source for the evaluations a test's watchers ask for."""
    counter = itertools.count(1)
    return lambda: f"eval-{next(counter)}"

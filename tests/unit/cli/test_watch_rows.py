"""The live views' rows (pure): what each column counts."""

from __future__ import annotations

from datetime import UTC, datetime

from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.cli.watch import (
    DEPLOYMENT_COLUMNS,
    JOB_COLUMNS,
    deployment_rows,
    deployment_table,
    job_rows,
)

A = allocation_pb2


def test_deployment_rows() -> None:
    d = deployment_pb2.Deployment(id="d")
    g = d.task_groups["web"]
    g.desired_total, g.desired_canaries, g.placed_allocs, g.healthy_allocs = 3, 1, 2, 1
    g.placed_canaries.append("c1")
    [row] = deployment_rows(d)
    assert dict(zip(DEPLOYMENT_COLUMNS, row, strict=True)) == {
        "Group": "web", "Desired": 3, "Canaries": "1/1", "Placed": 2, "Healthy": 1,
        "Unhealthy": 0, "Promoted": "no", "Deadline": "N/A"}  # no field left blank
    g.promoted = True
    by = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)  # another day: date and time, local
    g.require_progress_by.FromDatetime(by)
    [row] = deployment_rows(d)
    shown = dict(zip(DEPLOYMENT_COLUMNS, row, strict=True))
    assert shown["Promoted"] == "yes"
    assert shown["Deadline"] == by.astimezone().strftime("%b %d %H:%M %Z")


def test_a_deployment_without_canaries_shows_no_canary_columns() -> None:
    d = deployment_pb2.Deployment(id="d")
    d.task_groups["api"].desired_total = 2
    columns, [row] = deployment_table(d)
    assert columns == ["Group", "Desired", "Placed", "Healthy", "Unhealthy", "Deadline"]
    assert row == ["api", 2, 0, 0, 0, "N/A"]


def test_job_rows_count_the_current_version_only() -> None:
    job = job_pb2.Job(id="j", version=2, task_groups=[job_pb2.TaskGroup(name="g", count=3)])

    def alloc(version: int, client: A.AllocClientStatus, healthy: bool | None = None,
              desired: A.AllocDesiredStatus = A.ALLOC_DESIRED_STATUS_RUN,
              ) -> allocation_pb2.Allocation:
        a = A.Allocation(job_version=version, task_group="g", client_status=client,
                         desired_status=desired)
        if healthy is not None:
            a.deployment_status.healthy = healthy
        return a

    allocs = [alloc(2, A.ALLOC_CLIENT_STATUS_RUNNING, True),
              alloc(2, A.ALLOC_CLIENT_STATUS_RUNNING, False),
              alloc(2, A.ALLOC_CLIENT_STATUS_LOST, desired=A.ALLOC_DESIRED_STATUS_STOP),
              alloc(1, A.ALLOC_CLIENT_STATUS_RUNNING, True)]
    [row] = job_rows(job, allocs)
    assert dict(zip(JOB_COLUMNS, row, strict=True)) == {
        "Group": "g", "Desired": 3, "Placed": 2, "Running": 2, "Healthy": 1, "Unhealthy": 1,
        "Failed": 0, "Lost": 1, "Complete": 0}

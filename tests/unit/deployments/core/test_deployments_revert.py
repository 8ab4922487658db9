"""Choosing the auto-revert target from the job version history."""

from __future__ import annotations

from deployments_builders import job
from google.protobuf.timestamp_pb2 import Timestamp

from drover.api.types.v1 import job_pb2
from drover.deployments.core.revert import RevertChoice, choose_revert, same_spec

FAILURE = "Failed due to unhealthy allocations"


def test_same_spec_ignores_version_bookkeeping() -> None:
    a = job(1, stable=True, image="web:1")
    b = job(7, stable=False, image="web:1", job_modify_index=999)
    b.status = job_pb2.JOB_STATUS_RUNNING
    b.status_description = "running"
    b.submit_time.CopyFrom(Timestamp(seconds=123))
    b.modify_index = 4242
    b.create_index = 1
    assert same_spec(a, b)


def test_same_spec_sees_a_changed_task() -> None:
    assert not same_spec(job(1, image="web:1"), job(1, image="web:2"))


def test_same_spec_sees_a_changed_count() -> None:
    a, b = job(1), job(1)
    b.task_groups[0].count += 1
    assert not same_spec(a, b)


def test_reverts_to_the_latest_stable_version() -> None:
    failed = job(4, image="web:4")
    history = [failed, job(3, image="web:3"), job(2, stable=True, image="web:2"),
               job(1, stable=True, image="web:1")]
    choice = choose_revert(failed, history, FAILURE)
    assert choice == RevertChoice(f"{FAILURE} - rolling back to job version 2", to_version=2)
    assert choice.target is not None and choice.target.version == 2


def test_order_of_the_history_does_not_matter() -> None:
    failed = job(4, image="web:4")
    history = [job(1, stable=True, image="web:1"), job(2, stable=True, image="web:2"), failed]
    assert choose_revert(failed, history, FAILURE).to_version == 2


def test_newer_and_current_versions_are_not_targets() -> None:
    failed = job(3, stable=True, image="web:3")
    history = [job(5, stable=True, image="web:5"), failed, job(1, stable=True, image="web:1")]
    assert choose_revert(failed, history, FAILURE).to_version == 1


def test_same_spec_revert_is_skipped_to_avoid_a_loop() -> None:
    # v1 stable, v2 failed and was reverted as v3 (= v1's spec); now v3 fails.
    failed = job(3, image="web:1")
    history = [failed, job(2, image="web:2"), job(1, stable=True, image="web:1")]
    choice = choose_revert(failed, history, FAILURE)
    assert choice.to_version is None and choice.target is None
    assert choice.description == (
        f"{FAILURE} - not rolling back to stable job version 1 as"
        " current job has same specification"
    )


def test_no_stable_version_says_so() -> None:
    failed = job(2, image="web:2")
    choice = choose_revert(failed, [failed, job(1, image="web:1")], FAILURE)
    assert choice == RevertChoice(f"{FAILURE} - no stable job version to auto revert to")

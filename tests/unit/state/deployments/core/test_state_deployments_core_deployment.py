"""UpdateDeployment's planner (:mod:`drover.state.deployments.core.deployment`) on views built
from plain data: revert, stable version, promoted canaries cleared."""

from __future__ import annotations

from state_core_data import KEYS, context, key, service_job, stored, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
)
from drover.coord.kv import Compare
from drover.state.core import codec
from drover.state.deployments.core import deployment


def test_deployment_update_reverts_marks_stable_and_clears_promoted_canaries() -> None:
    job = stored(service_job(), 2)
    job.job_modify_index = 8
    v1 = stored(service_job(), 1)
    before = deployment_pb2.Deployment(id="d1", namespace="default", job_id="web",
                                       status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    before.task_groups["g"].promoted = False
    canary = allocation_pb2.Allocation(id="c1", namespace="default", job_id="web",
                                       deployment_id="d1", task_group="g")
    canary.deployment_status.canary = True
    v = view([(codec.JOBS, job, 5, 8), (codec.JOB_VERSIONS, v1, 6, 6),
              (codec.DEPLOYMENTS, before, 7, 9), (codec.ALLOCATIONS, canary, 10, 11)])
    after = deployment_pb2.Deployment()
    after.CopyFrom(before)
    after.status, after.modify_index = deployment_pb2.DEPLOYMENT_STATUS_FAILED, 9
    after.status_description = "Failed due to unhealthy allocations - rolling back to job version 1"
    after.task_groups["g"].promoted = True
    req = state_pb2.UpdateDeploymentRequest(deployment=after, stable_job_version=1,
                                            revert_job=v1, revert_expected_job_modify_index=8)
    plan = deployment.plan_deployment_update(v, context(), req, after, [])
    assert plan.compares == (
        Compare(key(codec.DEPLOYMENTS, "default", "d1"), "mod", 9),
        Compare(KEYS.version_key("default", "web", 1), "mod", 6),
        Compare(key(codec.JOBS, "default", "web"), "mod", 8),
        Compare(KEYS.version_key("default", "web", 3), "mod", 0),
        Compare(key(codec.DEPLOYMENTS, "default", "id-1"), "mod", 0),
        Compare(key(codec.ALLOCATIONS, "default", "c1"), "mod", 11),
    )
    reverted = codec.decode(codec.JOBS, plan.ops[2].value, 5, 12)  # type: ignore[union-attr]
    assert reverted.version == 3  # next_version: current 2 + 1
    cleared = codec.decode(codec.ALLOCATIONS, plan.ops[-1].value, 10, 12)  # type: ignore[union-attr]
    assert not cleared.deployment_status.canary
    assert plan.respond(12).reverted_job_version == 1
    # The user changed the job meanwhile: the revert is skipped, not the write.
    req.revert_expected_job_modify_index = 7
    skipped = deployment.plan_deployment_update(v, context(), req, after, [])
    assert not skipped.respond(12).HasField("reverted_job_version")
    assert codec.JOBS not in {e.kind for e in skipped.events}
    described = codec.decode(codec.DEPLOYMENTS, skipped.ops[0].value, 7, 12)  # type: ignore[union-attr]
    assert described.status_description == (
        "Failed due to unhealthy allocations - not rolling back to job version 1: the job "
        "changed meanwhile")

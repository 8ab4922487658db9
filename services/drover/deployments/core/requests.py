"""A watcher decision as the state service's UpdateDeployment request (pure).

The request carries the deployment's *full* new value, compared on its
``modify_index``. The value is built on the newest *stored* version the
shell knows (from the stream or its own last write), not on the version
the decision was taken on: a decision carries the new values of the fields
the watcher owns (:mod:`.effects`), so applying it to a fresher base is
correct, and two decisions queued back to back do not conflict with each
other. Only a change by another writer since that base makes the compare
fail.

:func:`echo_key` is how the shell recognises its own writes coming back on
the deployment stream: the value it wrote, without what the state service
sets on write (indexes, modify time).
"""

from __future__ import annotations

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2

from .effects import Decision, apply_update


def build_request(
    stored: deployment_pb2.Deployment, decision: Decision, now: float
) -> state_pb2.UpdateDeploymentRequest:
    """The one write for ``decision`` on top of the ``stored`` deployment."""
    if decision.update is not None:
        value = apply_update(stored, decision.update)
    else:
        value = deployment_pb2.Deployment()
        value.CopyFrom(stored)
    value.modify_index = stored.modify_index
    req = state_pb2.UpdateDeploymentRequest(deployment=value)
    if decision.mark_stable is not None:
        req.stable_job_version = decision.mark_stable.version
    if decision.revert is not None:
        req.revert_job.CopyFrom(decision.revert.job)
        req.revert_expected_job_modify_index = decision.revert.expected_job_modify_index
    if decision.evaluation is not None:
        req.evaluations.append(decision.evaluation.to_proto(now))
    health = decision.alloc_health
    if health is not None:
        for ids, healthy in ((health.healthy_ids, True), (health.unhealthy_ids, False)):
            for alloc_id in ids:
                req.allocation_updates.append(state_pb2.AllocationUpdate(
                    namespace=health.namespace, id=alloc_id, healthy=healthy))
    return req


def echo_key(deployment: deployment_pb2.Deployment) -> bytes:
    """The deployment's value without the fields a write sets."""
    copy = deployment_pb2.Deployment()
    copy.CopyFrom(deployment)
    for name in ("create_index", "modify_index", "modify_time"):
        copy.ClearField(name)
    return copy.SerializeToString(deterministic=True)


def written(
    request: state_pb2.UpdateDeploymentRequest, index: int
) -> deployment_pb2.Deployment:
    """The deployment as stored by a successful ``request`` at ``index``."""
    out = deployment_pb2.Deployment()
    out.CopyFrom(request.deployment)
    out.modify_index = index
    return out


def result(
    request: state_pb2.UpdateDeploymentRequest,
    response: state_pb2.UpdateDeploymentResponse | None,
    current: deployment_pb2.Deployment,
) -> deployments_pb2.DeploymentUpdateResult:
    """What a steering RPC answers (``response`` None: nothing had to be written)."""
    out = deployments_pb2.DeploymentUpdateResult(deployment=current,
                                                 index=current.modify_index)
    if response is not None:
        out.index = response.index
        if response.eval_ids:
            out.eval_id = response.eval_ids[0]
        if response.HasField("reverted_job_version"):
            out.reverted_job_version = response.reverted_job_version
    elif request.evaluations:
        out.eval_id = request.evaluations[0].id
    return out

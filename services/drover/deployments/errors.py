"""Errors of the deployment watcher's operations, each named by its cause.

They subclass the roots in :mod:`drover.errors`, so the one gRPC mapping in
:mod:`drover.rpc.errors` turns them into statuses with an ErrorInfo reason.
Messages name the offending groups or allocations, because the operator who
called Promote or SetAllocHealth has to know what to fix.
"""

from __future__ import annotations

from drover.errors import FailedPrecondition, InvalidArgument, NotFound


class DeploymentNotFound(NotFound):
    """No watcher tracks this deployment (unknown, or already terminal)."""

    reason = "DEPLOYMENT_NOT_FOUND"


class DeploymentNotActive(FailedPrecondition):
    """The deployment is neither running nor paused: it can't be steered."""

    reason = "DEPLOYMENT_NOT_ACTIVE"


class NoCanaries(FailedPrecondition):
    """Promote was asked of a deployment (or groups) without canaries."""

    reason = "NO_CANARIES"


class CanariesUnhealthy(FailedPrecondition):
    """Promote was asked while a group's canaries are not all healthy."""

    reason = "CANARIES_UNHEALTHY"


class UnknownTaskGroup(InvalidArgument):
    """Promote named task groups that the deployment does not have."""

    reason = "UNKNOWN_TASK_GROUP"


class AllocationNotInDeployment(InvalidArgument):
    """SetAllocHealth named allocations that do not belong to the deployment."""

    reason = "ALLOCATION_NOT_IN_DEPLOYMENT"


class InvalidAllocHealth(InvalidArgument):
    """SetAllocHealth named no allocation, or one as both healthy and unhealthy."""

    reason = "INVALID_ALLOC_HEALTH"

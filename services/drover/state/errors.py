"""Every error the state service defines, by cause, under the drover error root.

Each carries its wire ``reason`` (google.rpc.ErrorInfo) and its kind (the
gRPC status :mod:`drover.rpc.errors` maps it to); the messages are written
where the rule refuses. Grouped by the family that raises them.
:class:`Replan` alone is no answer to a client: the write pipeline's signal
that a rule refused on a stale view (:mod:`drover.state.pipeline`).
"""

from __future__ import annotations

from drover.errors import (
    Conflict,
    DroverError,
    FailedPrecondition,
    Kind,
    Unavailable,
)

# -- reads and Subscribe -----------------------------------------------------

class StaleReadBound(Unavailable):
    """A bounded stale read reached a replica out of touch with etcd for
    longer than the bound (``metadata``: ``last_contact``, ``max_stale``)."""

    reason = "STALE_READ_BOUND"


class IndexCompacted(DroverError):
    """A Subscribe from an index etcd has compacted away: list, then subscribe again."""

    kind = Kind.OUT_OF_RANGE
    reason = "INDEX_COMPACTED"


class SubscriberTooSlow(DroverError):
    """A Subscribe stream that fell further behind than the replica buffers: ended."""

    kind = Kind.RESOURCE_EXHAUSTED
    reason = "SUBSCRIBER_TOO_SLOW"


class ReplicaStopping(Unavailable):
    """A Subscribe stream ended (or refused) because its replica is shutting
    down: subscribe again on another replica from the last index."""

    reason = "REPLICA_STOPPING"


# -- the write pipeline ------------------------------------------------------

class Replan(Exception):
    """A rule refused on a view that was not fresh: sync, then plan again.
    ``cause`` is what the refusal will be if a fresh view agrees."""

    def __init__(self, cause: DroverError) -> None:
        super().__init__(str(cause))
        self.cause = cause


# -- jobs --------------------------------------------------------------------

class JobNotStopped(FailedPrecondition):
    """StartJob on a job that is not stopped."""

    reason = "JOB_NOT_STOPPED"


class JobVersionMismatch(FailedPrecondition):
    """RevertJob whose ``enforce_prior_version`` is not the job's current version."""

    reason = "JOB_VERSION_MISMATCH"


class JobStopped(FailedPrecondition):
    """ScaleJob on a stopped job: start it first."""

    reason = "JOB_STOPPED"


class JobModifyIndexMismatch(FailedPrecondition):
    """RegisterJob whose ``enforce_index`` is not the job's modify index."""

    reason = "JOB_MODIFY_INDEX_MISMATCH"


# -- evaluations -------------------------------------------------------------
# (An evaluation write's refusals, EvaluationGone / EvaluationChanged /
# EvaluationExists, are the broker's too: they live in drover.errors.)

class BrokerNotPaused(FailedPrecondition):
    """DeleteEvaluations while the eval broker runs (pause it in the scheduler config)."""

    reason = "BROKER_NOT_PAUSED"


# -- allocations and plans ---------------------------------------------------

class AllocTerminal(FailedPrecondition):
    """StopAllocation of an allocation that is already terminal."""

    reason = "ALLOC_TERMINAL"


class NodeNotReady(FailedPrecondition):
    """A client report for an allocation whose node is down or disconnected."""

    reason = "NODE_NOT_READY"


class PlanStale(FailedPrecondition):
    """The state a plan was computed from has moved: re-read and plan again."""

    reason = "PLAN_STALE"


class PlanDeliveryEnded(FailedPrecondition):
    """The worker no longer holds the evaluation: drop it (no Nack)."""

    reason = "PLAN_DELIVERY_ENDED"


class BrokerUnreachable(Unavailable):
    """The broker leader could not be asked: the plan is not applied (retry)."""

    reason = "BROKER_UNREACHABLE"


# -- nodes -------------------------------------------------------------------

class NodeSecretMismatch(DroverError):
    """A client update presenting another secret than its node's (Nomad's SecretID)."""

    kind = Kind.PERMISSION_DENIED
    reason = "NODE_SECRET_MISMATCH"


# -- deployments -------------------------------------------------------------

class DeploymentChanged(Conflict):
    """The deployment's modify_index is not the one the caller based its update on."""

    reason = "DEPLOYMENT_CHANGED"


# -- acl ---------------------------------------------------------------------

class AclDisabled(FailedPrecondition):
    """An AclService call on a cluster that runs without ACLs."""

    reason = "ACL_DISABLED"

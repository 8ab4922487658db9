"""Errors of the eval broker, by cause, under the drover error root.

Ack, Nack and OutstandingReset distinguish *why* a worker's token is no good,
because the worker reacts differently: ``TokenExpired`` means "you were too
slow, somebody else may already have the evaluation" (drop the work),
``TokenMismatch`` means "that token was never issued for this evaluation"
(a bug), ``NotOutstanding`` means "nobody holds this evaluation right now".
"""

from __future__ import annotations

from drover.errors import (
    DroverError,
    FailedPrecondition,
    Kind,
    NotFound,
    OutcomeUnknown,
    Unavailable,
)

__all__ = [
    "BrokerDisabled",
    "EvaluationInFlight",
    "NotFailed",
    "NotOutstanding",
    "ResyncNeeded",
    "TokenExpired",
    "TokenMismatch",
    "UnknownEvaluation",
    "WriteOutcomeUnknown",
]


class UnknownEvaluation(NotFound):
    """The broker holds no evaluation with this id."""

    reason = "UNKNOWN_EVALUATION"

    def __init__(self, eval_id: str) -> None:
        super().__init__(
            f"evaluation {eval_id!r} is not held by the eval broker",
            metadata={"eval_id": eval_id},
        )


class NotOutstanding(FailedPrecondition):
    """The evaluation is held, but no worker has it outstanding (unacked)."""

    reason = "NOT_OUTSTANDING"

    def __init__(self, eval_id: str, state: str) -> None:
        super().__init__(
            f"evaluation {eval_id!r} is not outstanding (it is {state})",
            metadata={"eval_id": eval_id, "state": state},
        )


class TokenExpired(NotOutstanding):
    """The token was issued for this evaluation, but its nack timer fired."""

    reason = "TOKEN_EXPIRED"

    def __init__(self, eval_id: str, state: str) -> None:
        FailedPrecondition.__init__(
            self,
            f"the token for evaluation {eval_id!r} expired: its nack timeout passed and the "
            f"evaluation was taken back (it is {state} now)",
            metadata={"eval_id": eval_id, "state": state},
        )


class TokenMismatch(FailedPrecondition):
    """The token does not belong to the current delivery of the evaluation."""

    reason = "TOKEN_MISMATCH"

    def __init__(self, eval_id: str) -> None:
        super().__init__(
            f"the token does not match the outstanding delivery of evaluation {eval_id!r}",
            metadata={"eval_id": eval_id},
        )


class EvaluationInFlight(FailedPrecondition):
    """The evaluation is being processed by a worker and cannot be cancelled."""

    reason = "EVALUATION_IN_FLIGHT"

    def __init__(self, eval_id: str) -> None:
        super().__init__(
            f"evaluation {eval_id!r} is being processed by a worker; nack it or wait for its ack",
            metadata={"eval_id": eval_id},
        )


class NotFailed(FailedPrecondition):
    """``release_failed`` for an evaluation that is not in the failed state."""

    reason = "NOT_FAILED"

    def __init__(self, eval_id: str, state: str) -> None:
        super().__init__(
            f"evaluation {eval_id!r} has not reached its delivery limit (it is {state})",
            metadata={"eval_id": eval_id, "state": state},
        )


class BrokerDisabled(Unavailable):
    """The broker is not the delivering leader (disabled or a hot standby)."""

    reason = "BROKER_DISABLED"

    def __init__(self, mode: str) -> None:
        super().__init__(
            f"the eval broker is {mode}: only the leader's enabled broker serves this",
            metadata={"mode": mode},
        )


class WriteOutcomeUnknown(OutcomeUnknown):
    """A write was sent to the state service and its answer never came: the
    term ended while it was in flight, or the state replica or etcd stopped
    answering. It may or may not have landed (its fence held, or did not,
    when etcd applied it). An ack may be sent again to the leader; the
    store says which it was."""


class ResyncNeeded(DroverError):
    """The event stream ended in a way only a fresh read can repair."""

    kind = Kind.UNAVAILABLE
    reason = "RESYNC_NEEDED"

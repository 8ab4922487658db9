"""Effects: the state-store writes the broker core asks its shell to make.

The core does no I/O. Where Nomad's broker would write through raft (cancel
superseded evaluations, fail an evaluation that reached its delivery limit,
create its follow-up), the core returns one of these frozen values and the
shell writes it with the leader fence, in the order returned.

Guarantees the shell relies on:

* Effects are only returned by a leader (enabled) core. A hot standby
  computes the same supersede decisions but defers their cancellations
  until it is promoted, so a leader that dies before writing them loses
  nothing (:meth:`drover.broker.core.EvalBroker.enable` returns them).
* Each effect is idempotent against the store: writing a cancel for an
  evaluation that is already terminal must be a no-op, not an error.
* ``MarkFailed`` is always immediately followed by the ``CreateFollowUp``
  it names (``next_eval``); the shell should write the pair in one
  transaction, then call ``release_failed`` (or let the event stream's
  ``failed`` status release it).
* Cancellations are written *at once*: unlike Nomad, which cancels
  superseded evaluations lazily in batches, the broker never keeps a backlog
  of cancellable evaluations in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus

__all__ = [
    "CancelSuperseded",
    "CreateFollowUp",
    "Effect",
    "MarkCanceled",
    "MarkFailed",
    "MarkPending",
    "delivery_limit_reached",
]


@dataclass(frozen=True, slots=True)
class CancelSuperseded:
    """Cancel evaluations of one job made redundant by evaluation ``by``."""

    namespace: str
    job_id: str
    eval_ids: tuple[str, ...]
    by: str

    @property
    def description(self) -> str:
        return f"superseded by evaluation {self.by}"


@dataclass(frozen=True, slots=True)
class MarkCanceled:
    """An operator cancelled a queued evaluation (CancelEvaluation)."""

    namespace: str
    eval_id: str
    description: str


@dataclass(frozen=True, slots=True)
class MarkFailed:
    """Mark an evaluation failed; ``next_eval`` is its follow-up's id."""

    namespace: str
    eval_id: str
    description: str
    next_eval: str


@dataclass(frozen=True, slots=True)
class CreateFollowUp:
    """Create ``evaluation`` (status pending, ``wait_until`` in the future)."""

    evaluation: Evaluation


@dataclass(frozen=True, slots=True)
class MarkPending:
    """A blocked evaluation was unblocked: store it as pending.

    Written so that an unblock survives a failover: the next leader
    restores the evaluation as pending (deliverable), not blocked.
    """

    namespace: str
    eval_id: str
    description: str


Effect = CancelSuperseded | MarkCanceled | MarkFailed | CreateFollowUp | MarkPending

FAILED_FOLLOW_UP = "failed-follow-up"


def delivery_limit_reached(
    failed: Evaluation, limit: int, follow_up_id: str, follow_up_at: float
) -> list[Effect]:
    """Fail ``failed`` and create its follow-up, due at ``follow_up_at`` (Unix seconds).

    The follow-up (Nomad's failed follow-up evaluation) retries the job
    later with a fresh delivery count, so a poison evaluation backs off
    instead of spinning the workers.
    """
    follow_up = Evaluation(
        id=follow_up_id,
        namespace=failed.namespace,
        priority=failed.priority,
        type=failed.type,
        triggered_by=FAILED_FOLLOW_UP,
        job_id=failed.job_id,
        job_modify_index=failed.job_modify_index,
        status=EvaluationStatus.EVALUATION_STATUS_PENDING,
        status_description=f"follow-up of failed evaluation {failed.id}",
        previous_eval=failed.id,
    )
    follow_up.wait_until.FromNanoseconds(int(follow_up_at * 1e9))
    return [
        MarkFailed(
            failed.namespace,
            failed.id,
            f"evaluation reached delivery limit ({limit})",
            follow_up.id,
        ),
        CreateFollowUp(follow_up),
    ]

"""Effects: the state-store writes the broker core asks its shell to make.

The core does no I/O. Where Nomad's broker would write through raft (cancel
superseded evaluations, fail an evaluation that reached its delivery limit,
create its follow-up), the core returns one of these frozen values and the
shell writes it with the leader fence, in the order returned.

Guarantees the shell relies on:

* Effects are only returned by a leader (enabled) core. A hot standby
  computes the same supersede decisions but defers their cancellations
  until it is promoted, so a leader that dies before writing them loses
  nothing (:meth:`drover.broker.core.broker.EvalBroker.enable` returns them).
* Each effect is idempotent against the store: writing a cancel for an
  evaluation that is already terminal must be a no-op, not an error.
* ``MarkFailed`` is always immediately followed by the ``CreateFollowUp``
  it names (``next_eval``); the shell should write the pair in one
  transaction, then call ``release_failed`` (or let the event stream's
  ``failed`` status release it).
* Every effect carries the bodies of the evaluations it changes (not
  compared: two effects are equal when they decide the same thing), because
  the state service writes whole evaluations and the core may already have
  forgotten a cancelled one. A changed evaluation is written as an *update*
  compared on the body's ``modify_index`` (what the broker held), never a
  create: one deleted or changed meanwhile is left alone
  (:class:`WriteGroup`); a follow-up is a *create* of a new id.
* Cancellations are written *at once*: unlike Nomad, which cancels
  superseded evaluations lazily in batches, the broker never keeps a backlog
  of cancellable evaluations in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus

__all__ = [
    "CancelSuperseded",
    "CreateFollowUp",
    "Effect",
    "MarkCanceled",
    "MarkFailed",
    "WriteGroup",
    "delivery_limit_reached",
    "to_writes",
]


@dataclass(frozen=True, slots=True)
class CancelSuperseded:
    """Cancel evaluations of one job made redundant by evaluation ``by``."""

    namespace: str
    job_id: str
    eval_ids: tuple[str, ...]
    by: str
    evaluations: tuple[Evaluation, ...] = field(default=(), compare=False)

    @property
    def description(self) -> str:
        return f"superseded by evaluation {self.by}"


@dataclass(frozen=True, slots=True)
class MarkCanceled:
    """An operator cancelled a queued evaluation (CancelEvaluation)."""

    namespace: str
    eval_id: str
    description: str
    evaluation: Evaluation | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class MarkFailed:
    """Mark an evaluation failed; ``next_eval`` is its follow-up's id."""

    namespace: str
    eval_id: str
    description: str
    next_eval: str
    evaluation: Evaluation | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class CreateFollowUp:
    """Create ``evaluation`` (status pending, ``wait_until`` in the future)."""

    evaluation: Evaluation


Effect = CancelSuperseded | MarkCanceled | MarkFailed | CreateFollowUp

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
            failed,
        ),
        CreateFollowUp(follow_up),
    ]


@dataclass(frozen=True, slots=True)
class WriteGroup:
    """Evaluations to write in one transaction; ``failed`` names a MarkFailed
    whose job slot the core frees (``release_failed``) once it is written.

    ``evaluations`` are updates of evaluations the broker held, each
    compared on its ``modify_index``; ``creates`` are new evaluations
    (follow-ups), compared absent.
    """

    evaluations: tuple[Evaluation, ...]
    failed: str = ""
    creates: tuple[Evaluation, ...] = ()

    @property
    def size(self) -> int:
        return len(self.evaluations) + len(self.creates)


_CANCELED = EvaluationStatus.EVALUATION_STATUS_CANCELED


def _with_status(body: Evaluation, status: int, description: str) -> Evaluation:
    out = Evaluation()
    out.CopyFrom(body)
    out.status = status  # type: ignore[assignment]
    out.status_description = description
    return out


def to_writes(effects: list[Effect]) -> list[WriteGroup]:
    """The state-store writes for ``effects``, in order; pure.

    An effect without a body (none is produced by this core, but a
    defensive caller may build one) is skipped: the store cannot be patched.
    ``MarkFailed`` and its ``CreateFollowUp`` land in one group.
    """
    groups: list[WriteGroup] = []
    i = 0
    while i < len(effects):
        effect = effects[i]
        i += 1
        if isinstance(effect, CancelSuperseded):
            bodies = tuple(
                _with_status(e, _CANCELED, effect.description) for e in effect.evaluations
            )
            if bodies:
                groups.append(WriteGroup(bodies))
        elif isinstance(effect, MarkCanceled):
            if effect.evaluation is not None:
                groups.append(
                    WriteGroup((_with_status(effect.evaluation, _CANCELED, effect.description),))
                )
        elif isinstance(effect, MarkFailed):
            failed: list[Evaluation] = []
            created: list[Evaluation] = []
            if effect.evaluation is not None:
                body = _with_status(
                    effect.evaluation,
                    EvaluationStatus.EVALUATION_STATUS_FAILED,
                    effect.description,
                )
                body.next_eval = effect.next_eval
                failed.append(body)
            if i < len(effects) and isinstance(effects[i], CreateFollowUp):
                follow = effects[i]
                assert isinstance(follow, CreateFollowUp)
                created.append(follow.evaluation)
                i += 1
            groups.append(WriteGroup(tuple(failed), effect.eval_id, tuple(created)))
        elif isinstance(effect, CreateFollowUp):
            groups.append(WriteGroup((), creates=(effect.evaluation,)))
    return groups

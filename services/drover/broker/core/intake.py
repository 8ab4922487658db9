"""Intake: what the store shows becomes what the broker holds (pure).

:class:`Intake` is the feeding half of :class:`~drover.broker.core.broker.EvalBroker`:
it places a newly seen evaluation (pending, blocked, or pending with a
``wait_until`` still ahead), follows the event stream's updates of the ones
held (a newer ``modify_index``, blocked <-> pending, terminal), forgets the
deleted, and keeps the worker requeues (Nomad's EnqueueAll with a token: an
evaluation re-submitted by the worker holding its delivery waits here until
that delivery is acked, see :mod:`.delivery`).

Invariants:

* an evaluation id is held at most once: placing an id already held, or one
  whose cancellation a standby deferred (:class:`~.deferred.DeferredCancels`),
  is a no-op;
* only pending (or unspecified) and blocked evaluations are ever held;
  a terminal update forgets the evaluation, and a *complete* one untracks
  its job's older blocked evaluation (the job was placed);
* a requeue is kept only for the token of the evaluation's own outstanding
  delivery, and dies with that delivery (forgotten, nacked, timed out, or
  every token at once on a step down).

The mode gate is the caller's: every method here returns the effects its
change implies, and the core decides whether they are emitted or deferred.

Pure: no asyncio, no I/O (it is under :mod:`drover.broker.core`); time is
passed in (``now``, monotonic) or read from the injected wall clock (Unix
seconds, for ``wait_until``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.core.deferred import DeferredCancels
from drover.broker.core.effects import Effect
from drover.broker.core.held import HeldEvaluations
from drover.broker.core.record import EvalState

__all__ = ["Intake"]

_S = EvaluationStatus
# Plain ints, read once: an enum wrapper's attribute is a slow lookup, and
# these are tested once per evaluation event on every replica.
_QUEUEABLE = frozenset((_S.EVALUATION_STATUS_PENDING, _S.EVALUATION_STATUS_UNSPECIFIED))
_TERMINAL = frozenset((
    _S.EVALUATION_STATUS_COMPLETE,
    _S.EVALUATION_STATUS_FAILED,
    _S.EVALUATION_STATUS_CANCELED,
))
_COMPLETE = _S.EVALUATION_STATUS_COMPLETE
_BLOCKED = _S.EVALUATION_STATUS_BLOCKED


class Intake:
    def __init__(
        self,
        held: HeldEvaluations,
        deferred: DeferredCancels,
        wall: Callable[[], float],
    ) -> None:
        self._held = held
        self._deferred = deferred
        self._wall = wall
        # Token of an unacked evaluation -> that evaluation as re-submitted
        # by its worker, enqueued once the token is acked (Nomad's requeue).
        self._requeue: dict[str, Evaluation] = {}

    def enqueue_all(self, items: Iterable[tuple[Evaluation, str]], now: float) -> list[Effect]:
        """Place each new evaluation; hold a re-submission with its own
        outstanding delivery's token aside (see :meth:`take_requeued`)."""
        effects: list[Effect] = []
        for evaluation, token in items:
            rec = self._held.records.get(evaluation.id)
            if rec is None:
                effects.extend(self.place(evaluation, now))
            elif token and rec.state is EvalState.UNACKED and rec.token == token:
                self._requeue[token] = evaluation
        return effects

    def apply(self, evaluation: Evaluation, now: float) -> list[Effect]:
        """Follow one event-stream update of an evaluation."""
        status = evaluation.status
        held = self._held
        if status in _TERMINAL:
            self.forget(evaluation.id, now)
            if status == _COMPLETE:
                return held.untrack_blocked(evaluation, now)
            return []
        rec = held.records.get(evaluation.id)
        if rec is None:
            return self.place(evaluation, now)
        if evaluation.modify_index > rec.eval.modify_index:
            rec.eval = evaluation
            held.observe_index(rec, evaluation.modify_index)
        if status == _BLOCKED and rec.state not in (
            EvalState.BLOCKED,
            EvalState.UNACKED,
        ):
            held.release(rec, now)
            return self.place(evaluation, now)
        if status in _QUEUEABLE and rec.state is EvalState.BLOCKED:
            return held.unblock(rec, now)
        return []

    def forget(self, eval_id: str, now: float) -> None:
        """The evaluation was deleted from the store (or became terminal)."""
        rec = self._held.records.get(eval_id)
        if rec is None:
            self._deferred.discard(eval_id)
            return
        if rec.token is not None:
            self._requeue.pop(rec.token, None)
        self._held.release(rec, now)

    def place(self, evaluation: Evaluation, now: float) -> list[Effect]:
        """Hold an evaluation not held yet, in the state its status and
        ``wait_until`` call for."""
        status = evaluation.status
        if evaluation.id in self._deferred:
            return []
        held = self._held
        if status == _BLOCKED:
            return held.block(held.hold(evaluation), now)
        if status not in _QUEUEABLE:
            return []
        rec = held.hold(evaluation)
        if evaluation.HasField("wait_until"):
            wait_until = evaluation.wait_until
            delay = wait_until.seconds + wait_until.nanos * 1e-9 - self._wall()
            if delay > 0:
                held.set_state(rec, EvalState.WAITING, now, deadline=now + delay)
                return []
        return held.admit(rec, now)

    # -- requeues --------------------------------------------------------------

    def take_requeued(self, token: str) -> Evaluation | None:
        """The re-submission held for ``token``'s delivery, now removed."""
        return self._requeue.pop(token, None)

    def clear_requeues(self) -> None:
        """Every token died at once (a step down to standby)."""
        self._requeue.clear()

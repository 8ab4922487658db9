"""Deliveries: evaluations out with workers, and how they come back (pure).

:class:`Deliveries` is the worker half of
:class:`~drover.broker.core.broker.EvalBroker`: it hands out the best ready
evaluations (each with a fresh token carrying the term, see :mod:`.tokens`,
and a nack deadline), checks a worker's token, settles an ack, takes an
evaluation back on a Nack or a nack timeout (redelivered after a delay that
grows with its deliveries, jittered, or failed at the delivery limit), and
restarts the nack timer on OutstandingReset. It keeps the delivery timings
(ready wait, processing) and the nack and failure counters.

Invariants (leader only, at-least-once):

* one evaluation per job in flight: a delivered job's slot is UNACKED until
  acked or taken back, and its pending evaluation is not ready meanwhile;
* a token is valid only while its delivery is UNACKED; a token taken back
  by a nack timeout is remembered as expired, so a late ack is told so
  (:class:`~drover.broker.errors.TokenExpired`) rather than "mismatch";
* an evaluation at the delivery limit keeps its job's slot (FAILED) until
  the shell has written the failure and calls :meth:`release_failed`:
  another evaluation of the job must not run before it is recorded;
* a worker's re-submission (held by :class:`~.intake.Intake`) is placed
  when its delivery is acked and dropped when it is taken back, since the
  taken-back evaluation is redelivered anyway.

The leader check and the mode gate are the caller's (the core's): methods
here assume a delivering leader and return the effects of their change.

Pure: no asyncio, no I/O (it is under :mod:`drover.broker.core`); the
monotonic clock, the wall clock, the random source and the id factory are
injected.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import NamedTuple

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.config import BrokerConfig
from drover.broker.core.effects import Effect, delivery_limit_reached
from drover.broker.core.held import HeldEvaluations
from drover.broker.core.intake import Intake
from drover.broker.core.record import EvalRecord, EvalState
from drover.broker.core.stats import Reservoir
from drover.broker.core.tokens import make_token
from drover.broker.errors import (
    NotFailed,
    NotOutstanding,
    TokenExpired,
    TokenMismatch,
    UnknownEvaluation,
)

__all__ = ["Deliveries", "Delivery"]

UNACKED = EvalState.UNACKED


class Delivery(NamedTuple):
    """An evaluation handed to a worker by ``dequeue`` (a tuple: one is
    built per evaluation delivered)."""

    evaluation: Evaluation
    token: str
    # The worker's state snapshot must reach this index before planning.
    wait_index: int
    # 1 for the first delivery of this evaluation by this broker.
    deliveries: int


class Deliveries:
    def __init__(
        self,
        held: HeldEvaluations,
        intake: Intake,
        config: BrokerConfig,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        wall: Callable[[], float],
        new_id: Callable[[], str],
    ) -> None:
        self._held = held
        self._intake = intake
        self._config = config
        self._clock = clock
        self._rng = rng
        self._wall = wall
        self._new_id = new_id
        self.failed_total = 0
        # Every evaluation taken back from a worker: a Nack or a nack timeout.
        self.nacked_total = 0
        size = config.timing_reservoir
        self.ready_wait = Reservoir(size, rng)
        self.processing = Reservoir(size, rng)

    def dequeue_many(self, schedulers: Sequence[str], limit: int, term: int) -> list[Delivery]:
        """Up to ``limit`` deliveries of ``schedulers``, best first, one per
        job; tokens carry ``term``."""
        held = self._held
        pop_best = held.ready.pop_best
        rng = self._rng
        now = self._clock()
        deadline = now + self._config.nack_timeout
        new_id = self._new_id
        out: list[Delivery] = []
        while len(out) < limit:
            rec = pop_best(schedulers, rng)
            if rec is None:
                break
            self.ready_wait.add(now - rec.since)
            rec.deliveries += 1
            rec.token = token = make_token(term, new_id())
            held.set_state(rec, UNACKED, now, deadline=deadline)
            out.append(Delivery(rec.eval, token, held.wait_index(rec), rec.deliveries))
        return out

    def outstanding(self, eval_id: str, token: str) -> EvalRecord:
        """The record ``token`` currently holds; raises why it holds none."""
        rec = self._held.records.get(eval_id)
        if rec is None or rec.state is None:
            raise UnknownEvaluation(eval_id)
        if rec.state is EvalState.UNACKED and rec.token == token:
            return rec
        if token and token in rec.expired_tokens:
            raise TokenExpired(eval_id, rec.state.value)
        if rec.state is not EvalState.UNACKED:
            raise NotOutstanding(eval_id, rec.state.value)
        raise TokenMismatch(eval_id)

    def release_acked(self, eval_id: str, token: str) -> list[Effect]:
        """The worker finished; the job's pending evaluation becomes ready,
        and a re-submission held for this delivery is placed."""
        rec = self.outstanding(eval_id, token)
        now = self._clock()
        self.processing.add(now - rec.since)
        self._held.release(rec, now)
        requeued = self._intake.take_requeued(token)
        if requeued is None:
            return []
        return self._intake.place(requeued, now)

    def take_back_outstanding(self, eval_id: str, token: str) -> list[Effect]:
        """The worker gave up; redeliver after a delay, or fail at the limit."""
        rec = self.outstanding(eval_id, token)
        return self.take_back(rec, self._clock())

    def outstanding_reset(self, eval_id: str, token: str) -> None:
        """Restart the nack timer; the processing time still counts from
        the delivery."""
        rec = self.outstanding(eval_id, token)
        started = rec.since
        now = self._clock()
        self._held.set_state(rec, EvalState.UNACKED, now, deadline=now + self._config.nack_timeout)
        rec.since = started

    def expire(self, rec: EvalRecord, now: float) -> list[Effect]:
        """``rec``'s nack timer fired: its token expires and it is taken back."""
        if rec.token is not None:
            rec.expired_tokens += (rec.token,)
        return self.take_back(rec, now)

    def take_back(self, rec: EvalRecord, now: float) -> list[Effect]:
        self.nacked_total += 1
        if rec.token is not None:
            self._intake.take_requeued(rec.token)
        rec.token = None
        config = self._config
        if rec.deliveries >= config.delivery_limit:
            return self._fail(rec, now)
        delay = config.nack_delay(rec.deliveries)
        if delay > 0:
            delay *= 1 + self._rng.random() * config.nack_delay_jitter
            self._held.set_state(rec, EvalState.WAITING, now, deadline=now + delay)
        else:
            self._held.set_state(rec, EvalState.READY, now)
        return []

    def _fail(self, rec: EvalRecord, now: float) -> list[Effect]:
        # Keeps the job's slot until the shell has written the failure:
        # another evaluation of the job must not run before it is recorded.
        self._held.set_state(rec, EvalState.FAILED, now)
        self.failed_total += 1
        config = self._config
        wait = config.failed_follow_up_base + self._rng.random() * config.failed_follow_up_range
        return delivery_limit_reached(
            rec.eval, config.delivery_limit, self._new_id(), self._wall() + wait
        )

    def release_failed(self, eval_id: str) -> None:
        """The shell wrote the failure (MarkFailed): free the job's slot."""
        rec = self._held.records.get(eval_id)
        if rec is None or rec.state is None:
            raise UnknownEvaluation(eval_id)
        if rec.state is not EvalState.FAILED:
            raise NotFailed(eval_id, rec.state.value)
        self._held.release(rec, self._clock())

    def revoke_all(self) -> None:
        """Every token dies and the job slots go back to ready, as the store
        has them (pending): a step down to standby."""
        now = self._clock()
        for job in self._held.jobs.values():
            slot = job.slot
            if slot is not None and slot.state is not EvalState.READY:
                slot.token = None
                slot.expired_tokens = ()
                self._held.set_state(slot, EvalState.READY, now)
        self._intake.clear_requeues()

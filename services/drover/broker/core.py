"""The eval broker's pure core: Nomad's broker semantics, no I/O.

:class:`EvalBroker` is driven by its async shell: the shell feeds it
evaluations (``restore``, then ``apply`` for each event-stream update, and
``enqueue_all`` for worker requeues), serves workers (``dequeue``, ``ack``,
``nack``, ``outstanding_reset``), sleeps until ``next_deadline()`` and calls
``tick()``, and performs every returned effect against the state store
(:mod:`drover.broker.effects`). Time comes from an injected monotonic clock
and randomness (tokens, jitter, fairness) from an injected
``random.Random``, so tests run on a virtual clock, deterministically.

Modes (leader only, at-least-once delivery):

* ``DISABLED``: holds nothing, ignores feeds, refuses worker calls with
  :class:`BrokerDisabled` (Nomad's ``SetEnabled(false)``: leadership lost).
* ``STANDBY``: a follower's hot standby. It tracks ready, pending, waiting
  and blocked evaluations from the event stream exactly as a leader would,
  but delivers nothing, has nothing unacked and returns no effects: the
  cancellations its supersede decisions imply are deferred until promotion
  (or dropped when the stream shows the leader wrote them).
* ``LEADER``: delivers. ``enable()`` from STANDBY is the promotion: the old
  leader's unacked evaluations are pending in the store, so the standby
  already holds them as ready and they are deliverable at once; the
  deferred cancellations come back as effects. ``enable()`` from DISABLED
  starts empty and expects a ``restore()``.

Pausing (scheduler config ``pause_eval_broker``) is not a mode: a paused
leader keeps its queues, timers, acks and nacks, but ``dequeue`` delivers
nothing until it is resumed.

Unblocking: the broker cannot see cluster capacity, so the shell triggers
it: ``unblock_all`` when capacity may have grown (a node became ready or
changed, allocations stopped; coalesce bursts), ``unblock_job`` when a job's
own change makes its blocked evaluation worth retrying. A completed
evaluation written after a job's blocked evaluation was created untracks it
(Nomad's ``Untrack``): the job was placed, so the blocked one is forgotten
(not cancelled: nothing is written).
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.config import BrokerConfig
from drover.broker.deferred import DeferredCancels
from drover.broker.effects import (
    Effect,
    MarkCanceled,
    delivery_limit_reached,
)
from drover.broker.errors import (
    BrokerDisabled,
    EvaluationInFlight,
    NotFailed,
    NotOutstanding,
    TokenExpired,
    TokenMismatch,
    UnknownEvaluation,
)
from drover.broker.record import EvalRecord, EvalState, QueueEntry
from drover.broker.restore import bulk_load
from drover.broker.state import BrokerState
from drover.broker.stats import BrokerStats, Reservoir, snapshot
from drover.broker.tokens import make_token

__all__ = ["BrokerMode", "Delivery", "EvalBroker"]

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
# The RFC 4122 variant and version-4 bits of a random UUID, as uuid.UUID sets them.
_UUID_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID_V4 = (0x8000 << 48) | (4 << 76)
_BLOCKED = _S.EVALUATION_STATUS_BLOCKED


UNACKED = EvalState.UNACKED


class BrokerMode(enum.Enum):
    DISABLED = "disabled"
    STANDBY = "standby"
    LEADER = "leader"


class Delivery(NamedTuple):
    """An evaluation handed to a worker by ``dequeue`` (a tuple: one is
    built per evaluation delivered)."""

    evaluation: Evaluation
    token: str
    # The worker's state snapshot must reach this index before planning.
    wait_index: int
    # 1 for the first delivery of this evaluation by this broker.
    deliveries: int


class EvalBroker:
    def __init__(
        self,
        config: BrokerConfig | None = None,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        wall_clock: Callable[[], float] | None = None,
        token_factory: Callable[[], str] | None = None,
    ) -> None:
        """``clock`` is monotonic seconds; ``wall_clock`` (Unix seconds, for
        ``wait_until``) defaults to ``clock`` shifted to the wall time at
        construction, so a virtual clock drives both."""
        self._config = config or BrokerConfig()
        self._clock = clock
        self._rng = rng
        if wall_clock is None:
            offset = time.time() - clock()
            wall_clock = lambda: clock() + offset  # noqa: E731
        self._wall = wall_clock
        self._new_id = token_factory or self._random_uuid
        self._mode = BrokerMode.DISABLED
        self._paused = False
        # The leader term delivery tokens carry (0: none, see .tokens).
        self._term = 0
        self._reset()

    def _reset(self) -> None:
        self._state = BrokerState()
        # Token of an unacked evaluation -> that evaluation as re-submitted
        # by its worker, enqueued once the token is acked (Nomad's requeue).
        self._requeue: dict[str, Evaluation] = {}
        self._deferred = DeferredCancels()
        self._failed_total = 0
        # Every evaluation taken back from a worker: a Nack or a nack timeout.
        self.nacked_total = 0
        size = self._config.timing_reservoir
        self._ready_wait = Reservoir(size, self._rng)
        self._processing = Reservoir(size, self._rng)

    def _random_uuid(self) -> str:
        # str(uuid.UUID(int=..., version=4)), formatted directly: one per
        # delivery (its token), and the UUID class costs twice as much.
        n = (self._rng.getrandbits(128) & _UUID_CLEAR) | _UUID_V4
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    # -- modes -----------------------------------------------------------------

    @property
    def mode(self) -> BrokerMode:
        return self._mode

    @property
    def paused(self) -> bool:
        return self._paused

    def enable(self, term: int = 0) -> list[Effect]:
        """Become the delivering leader; from STANDBY this is the promotion.

        ``term`` is stamped on every delivery token (:mod:`.tokens`)."""
        self._term = term
        if self._mode is BrokerMode.LEADER:
            return []
        if self._mode is BrokerMode.DISABLED:
            self._reset()
            self._mode = BrokerMode.LEADER
            return []
        self._mode = BrokerMode.LEADER
        effects = self._deferred.drain()
        # A standby's READY slot is nobody's work in progress yet, so a
        # better pending evaluation replaces it now rather than after it.
        now = self._clock()
        for key in list(self._state.pending_jobs):
            effects.extend(self._state.collapse(key, now))
        return effects

    def standby(self) -> None:
        """Track without delivering. From LEADER: every token dies and the
        job slots go back to ready, as the store has them (pending)."""
        if self._mode is BrokerMode.STANDBY:
            return
        if self._mode is BrokerMode.DISABLED:
            self._reset()
        else:
            now = self._clock()
            for job in self._state.jobs.values():
                slot = job.slot
                if slot is not None and slot.state is not EvalState.READY:
                    slot.token = None
                    slot.expired_tokens = ()
                    self._state.set_state(slot, EvalState.READY, now)
            self._requeue.clear()
        self._mode = BrokerMode.STANDBY

    def disable(self) -> None:
        """Drop everything and refuse worker calls (leadership lost)."""
        self._mode = BrokerMode.DISABLED
        self._reset()

    def set_paused(self, paused: bool) -> None:
        self._paused = paused

    # -- feeding ---------------------------------------------------------------

    def restore(self, evaluations: Iterable[Evaluation]) -> list[Effect]:
        """Replace everything with the store's non-terminal ``evaluations``."""
        if self._mode is BrokerMode.DISABLED:
            raise BrokerDisabled(self._mode.value)
        self._reset()
        effects = bulk_load(self._state, evaluations, self._clock(), self._wall())
        return self._emit(effects)

    def enqueue(self, evaluation: Evaluation) -> list[Effect]:
        """Hold a pending or blocked evaluation; a no-op for an id already held."""
        return self.enqueue_all([(evaluation, "")])

    def enqueue_all(self, items: Iterable[tuple[Evaluation, str]]) -> list[Effect]:
        """Enqueue evaluations, each with an optional token (Nomad's EnqueueAll).

        An evaluation re-submitted with the token of its own outstanding
        delivery (a worker reblocking it) is held aside until that delivery
        is acked, then enqueued; a nack drops it, since the nacked
        evaluation is redelivered anyway.
        """
        if self._mode is BrokerMode.DISABLED:
            return []
        now = self._clock()
        effects: list[Effect] = []
        for evaluation, token in items:
            rec = self._state.records.get(evaluation.id)
            if rec is None:
                effects.extend(self._place_new(evaluation, now))
            elif token and rec.state is EvalState.UNACKED and rec.token == token:
                self._requeue[token] = evaluation
        return self._emit(effects)

    def apply(self, evaluation: Evaluation) -> list[Effect]:
        """Follow one event-stream update of an evaluation (leader and standby)."""
        if self._mode is BrokerMode.DISABLED:
            return []
        now = self._clock()
        status = evaluation.status
        state = self._state
        if status in _TERMINAL:
            self._forget(evaluation.id, now)
            if status == _COMPLETE:
                return self._emit(state.untrack_blocked(evaluation, now))
            return []
        rec = state.records.get(evaluation.id)
        if rec is None:
            return self._emit(self._place_new(evaluation, now))
        if evaluation.modify_index > rec.eval.modify_index:
            rec.eval = evaluation
            state.observe_index(rec, evaluation.modify_index)
        if status == _BLOCKED and rec.state not in (
            EvalState.BLOCKED,
            EvalState.UNACKED,
        ):
            state.release(rec, now)
            return self._emit(self._place_new(evaluation, now))
        if status in _QUEUEABLE and rec.state is EvalState.BLOCKED:
            return self._emit(state.unblock(rec, now))
        return []

    def forget(self, eval_id: str) -> None:
        """The evaluation was deleted from the store (or became terminal)."""
        if self._mode is not BrokerMode.DISABLED:
            self._forget(eval_id, self._clock())

    def _forget(self, eval_id: str, now: float) -> None:
        rec = self._state.records.get(eval_id)
        if rec is None:
            self._deferred.discard(eval_id)
            return
        if rec.token is not None:
            self._requeue.pop(rec.token, None)
        self._state.release(rec, now)

    def _place_new(self, evaluation: Evaluation, now: float) -> list[Effect]:
        status = evaluation.status
        if evaluation.id in self._deferred:
            return []
        state = self._state
        if status == _BLOCKED:
            return state.block(state.hold(evaluation), now)
        if status not in _QUEUEABLE:
            return []
        rec = state.hold(evaluation)
        if evaluation.HasField("wait_until"):
            wait_until = evaluation.wait_until
            delay = wait_until.seconds + wait_until.nanos * 1e-9 - self._wall()
            if delay > 0:
                state.set_state(rec, EvalState.WAITING, now, deadline=now + delay)
                return []
        return state.admit(rec, now)

    def _emit(self, effects: list[Effect]) -> list[Effect]:
        if not effects or self._mode is BrokerMode.LEADER:
            return effects
        self._deferred.defer(effects)
        return []

    # -- workers ---------------------------------------------------------------

    def dequeue(self, schedulers: Sequence[str]) -> Delivery | None:
        """The best ready evaluation of ``schedulers``, or None (the shell long-polls)."""
        batch = self.dequeue_many(schedulers, 1)
        return batch[0] if batch else None

    def dequeue_many(self, schedulers: Sequence[str], limit: int) -> list[Delivery]:
        """Up to ``limit`` deliveries, each as ``dequeue`` would make them
        one after the other (best first; one per job: a delivered job's
        pending evaluation is not ready until the delivery is acked)."""
        self._require_leader()
        if self._paused:
            return []
        state = self._state
        pop_best = state.ready.pop_best
        rng = self._rng
        now = self._clock()
        deadline = now + self._config.nack_timeout
        term = self._term
        new_id = self._new_id
        out: list[Delivery] = []
        while len(out) < limit:
            rec = pop_best(schedulers, rng)
            if rec is None:
                break
            self._ready_wait.add(now - rec.since)
            rec.deliveries += 1
            rec.token = token = make_token(term, new_id())
            state.set_state(rec, UNACKED, now, deadline=deadline)
            out.append(Delivery(rec.eval, token, state.wait_index(rec), rec.deliveries))
        return out

    def ack(self, eval_id: str, token: str) -> list[Effect]:
        """The worker finished; the job's pending evaluation becomes ready."""
        rec = self._outstanding(eval_id, token)
        now = self._clock()
        self._processing.add(now - rec.since)
        self._state.release(rec, now)
        requeued = self._requeue.pop(token, None)
        if requeued is None:
            return []
        return self._emit(self._place_new(requeued, now))

    def nack(self, eval_id: str, token: str) -> list[Effect]:
        """The worker gave up; redeliver after a delay, or fail at the limit."""
        rec = self._outstanding(eval_id, token)
        return self._emit(self._take_back(rec, self._clock()))

    def outstanding_reset(self, eval_id: str, token: str) -> None:
        """Restart the nack timer of an evaluation still being processed."""
        rec = self._outstanding(eval_id, token)
        started = rec.since
        now = self._clock()
        self._state.set_state(rec, EvalState.UNACKED, now, deadline=now + self._config.nack_timeout)
        rec.since = started

    def check_outstanding(self, eval_id: str, token: str) -> Evaluation:
        """The evaluation ``token`` currently holds; raises as ``ack`` would.

        Changes nothing: the shell writes an Ack's outcome first and acks
        the core only once the write is durable.
        """
        return self._outstanding(eval_id, token).eval

    def _outstanding(self, eval_id: str, token: str) -> EvalRecord:
        self._require_leader()
        rec = self._state.records.get(eval_id)
        if rec is None or rec.state is None:
            raise UnknownEvaluation(eval_id)
        if rec.state is EvalState.UNACKED and rec.token == token:
            return rec
        if token and token in rec.expired_tokens:
            raise TokenExpired(eval_id, rec.state.value)
        if rec.state is not EvalState.UNACKED:
            raise NotOutstanding(eval_id, rec.state.value)
        raise TokenMismatch(eval_id)

    def _take_back(self, rec: EvalRecord, now: float) -> list[Effect]:
        self.nacked_total += 1
        if rec.token is not None:
            self._requeue.pop(rec.token, None)
        rec.token = None
        config = self._config
        if rec.deliveries >= config.delivery_limit:
            return self._fail(rec, now)
        delay = config.nack_delay(rec.deliveries)
        if delay > 0:
            delay *= 1 + self._rng.random() * config.nack_delay_jitter
            self._state.set_state(rec, EvalState.WAITING, now, deadline=now + delay)
        else:
            self._state.set_state(rec, EvalState.READY, now)
        return []

    def _fail(self, rec: EvalRecord, now: float) -> list[Effect]:
        # Keeps the job's slot until the shell has written the failure:
        # another evaluation of the job must not run before it is recorded.
        self._state.set_state(rec, EvalState.FAILED, now)
        self._failed_total += 1
        config = self._config
        wait = config.failed_follow_up_base + self._rng.random() * config.failed_follow_up_range
        return delivery_limit_reached(
            rec.eval, config.delivery_limit, self._new_id(), self._wall() + wait
        )

    def release_failed(self, eval_id: str) -> None:
        """The shell wrote the failure (MarkFailed): free the job's slot."""
        self._require_leader()
        rec = self._state.records.get(eval_id)
        if rec is None or rec.state is None:
            raise UnknownEvaluation(eval_id)
        if rec.state is not EvalState.FAILED:
            raise NotFailed(eval_id, rec.state.value)
        self._state.release(rec, self._clock())

    # -- operator and unblock --------------------------------------------------

    def cancel(self, eval_id: str, reason: str = "") -> list[Effect]:
        """CancelEvaluation: remove a queued evaluation unless a worker has it."""
        self._require_leader()
        rec = self._state.records.get(eval_id)
        if rec is None or rec.state is None:
            raise UnknownEvaluation(eval_id)
        if rec.state is EvalState.UNACKED:
            raise EvaluationInFlight(eval_id)
        self._state.release(rec, self._clock())
        self._state.cancelled += 1
        description = "canceled by an operator" + (f": {reason}" if reason else "")
        return [MarkCanceled(rec.key[0], eval_id, description, rec.eval)]

    def unblock_all(self, reason: str = "capacity changed") -> list[Effect]:
        """Unblock every blocked evaluation (capacity may have grown)."""
        self._require_leader()
        return self._state.unblock_jobs(list(self._state.blocked_jobs), reason, self._clock())

    def unblock_job(self, namespace: str, job_id: str, reason: str = "job changed") -> list[Effect]:
        """Unblock one job's blocked evaluation, if it has one."""
        self._require_leader()
        return self._state.unblock_jobs([(namespace, job_id)], reason, self._clock())

    # -- timers ----------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When ``tick`` next has work (monotonic seconds), or None."""
        if self._mode is BrokerMode.DISABLED:
            return None
        return self._state.timers.next_deadline()

    def tick(self, now: float | None = None) -> list[Effect]:
        """Fire every timer due at ``now`` (default: the clock)."""
        if self._mode is BrokerMode.DISABLED:
            return []
        if now is None:
            now = self._clock()
        state = self._state
        effects: list[Effect] = []
        while (rec := state.timers.pop_due(now)) is not None:
            if rec.state is EvalState.UNACKED:
                if rec.token is not None:
                    rec.expired_tokens += (rec.token,)
                effects.extend(self._take_back(rec, now))
            elif rec.state is EvalState.WAITING:
                effects.extend(state.admit(rec, now))
        state.timers.compact(state.counts[EvalState.UNACKED] + state.counts[EvalState.WAITING])
        return self._emit(effects)

    # -- introspection ---------------------------------------------------------

    def ready_schedulers(self) -> frozenset[str]:
        """Scheduler types a ``dequeue`` could serve right now."""
        if self._mode is not BrokerMode.LEADER or self._paused:
            return frozenset()
        return self._state.ready.schedulers()

    def get(self, eval_id: str) -> EvalRecord | None:
        return self._state.records.get(eval_id)

    def iter_queue(
        self, after: tuple[int, str] | None = None, *, descending: bool = False
    ) -> Iterator[QueueEntry]:
        """Held evaluations in create-index order, strictly after ``after``."""
        return self._state.order.iterate(self._state.records, after, descending=descending)

    def stats(self) -> BrokerStats:
        state = self._state
        return snapshot(
            self._mode.value,
            self._paused,
            state.counts,
            {name: state.ready.count(name) for name in state.ready.schedulers()},
            state.unacked_by,
            cancelled=state.cancelled,
            failed=self._failed_total,
            ready_wait=self._ready_wait,
            processing=self._processing,
        )

    def _require_leader(self) -> None:
        if self._mode is not BrokerMode.LEADER:
            raise BrokerDisabled(self._mode.value)

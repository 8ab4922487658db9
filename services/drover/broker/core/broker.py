"""The eval broker's pure core: Nomad's broker semantics, no I/O.

:class:`EvalBroker` is driven by its async shell: the shell feeds it
evaluations (``restore``, then ``apply`` for each event-stream update, and
``enqueue_all`` for worker requeues), serves workers (``dequeue``, ``settle_ack``,
``take_back``, ``outstanding_reset``), sleeps until ``next_deadline()`` and calls
``tick()``, and performs every returned effect against the state store
(:mod:`drover.broker.core.effects`). Time comes from an injected monotonic clock
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

Unblocking: the broker cannot see cluster capacity, so it never unblocks by
itself: the state service stores a blocked evaluation as pending in the
txn that changes capacity it fits (:mod:`drover.state.evaluations.core.unblock`), and
the broker follows that write on its feed like any other (one path, and
nothing a failover could lose). It keeps one blocked evaluation per job,
the newest by ``max(create_index, snapshot_index)`` (Nomad's
``latestEvalIndex``), and writes the older one cancelled. A completed
evaluation written after a job's blocked evaluation was created untracks it
(Nomad's ``Untrack``): the job was placed, so the blocked one is forgotten
(not cancelled: nothing is written).

Built by composition, one concept per module: :class:`EvalBroker` owns the
modes, the mode gate (a leader emits effects, a standby defers them, a
disabled broker ignores feeds and refuses workers), the operator calls and
the timer tick; it delegates the data to :class:`~.held.HeldEvaluations`,
feeding to :class:`~.intake.Intake` and the worker side (tokens, acks,
nacks, nack timeouts, the delivery limit) to :class:`~.delivery.Deliveries`.
The three (and the deferred cancellations) are rebuilt together whenever
the broker drops what it holds (``disable``, ``restore``, ``enable`` from
DISABLED); the mode and the term outlive them.
"""

from __future__ import annotations

import enum
import functools
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.config import BrokerConfig
from drover.broker.core.deferred import DeferredCancels
from drover.broker.core.delivery import Deliveries, Delivery
from drover.broker.core.effects import Effect, MarkCanceled
from drover.broker.core.held import HeldEvaluations
from drover.broker.core.intake import Intake
from drover.broker.core.record import EvalRecord, EvalState, QueueEntry
from drover.broker.core.restore import bulk_load
from drover.broker.core.stats import BrokerStats, snapshot
from drover.broker.core.tokens import random_uuid
from drover.broker.errors import BrokerDisabled, EvaluationInFlight, UnknownEvaluation

__all__ = ["BrokerMode", "EvalBroker"]


class BrokerMode(enum.Enum):
    DISABLED = "disabled"
    STANDBY = "standby"
    LEADER = "leader"


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
        # The default id factory: one call per delivery (its token), so a
        # partial, not a method calling the function.
        self._random_uuid = functools.partial(random_uuid, rng)
        self._new_id = token_factory or self._random_uuid
        self._mode = BrokerMode.DISABLED
        self._paused = False
        # The leader term delivery tokens carry (0: none, see .tokens).
        self._term = 0
        self._reset()

    def _reset(self) -> None:
        self._held = held = HeldEvaluations()
        self._deferred = DeferredCancels()
        self._intake = Intake(held, self._deferred, self._wall)
        self._deliveries = Deliveries(held, self._intake, self._config, clock=self._clock,
                                      rng=self._rng, wall=self._wall, new_id=self._new_id)

    @property
    def nacked_total(self) -> int:
        """Every evaluation taken back from a worker: a Nack or a nack timeout."""
        return self._deliveries.nacked_total

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
        for key in list(self._held.pending_jobs):
            effects.extend(self._held.collapse(key, now))
        return effects

    def standby(self) -> None:
        """Track without delivering. From LEADER: every token dies and the
        job slots go back to ready, as the store has them (pending)."""
        if self._mode is BrokerMode.STANDBY:
            return
        if self._mode is BrokerMode.DISABLED:
            self._reset()
        else:
            self._deliveries.revoke_all()
        self._mode = BrokerMode.STANDBY

    def disable(self) -> None:
        """Drop everything and refuse worker calls (leadership lost)."""
        self._mode = BrokerMode.DISABLED
        self._reset()

    def set_paused(self, paused: bool) -> None:
        self._paused = paused

    def _emit(self, effects: list[Effect]) -> list[Effect]:
        """The mode gate: a leader's effects are performed, a standby's deferred."""
        if not effects or self._mode is BrokerMode.LEADER:
            return effects
        self._deferred.defer(effects)
        return []

    def _require_leader(self) -> None:
        if self._mode is not BrokerMode.LEADER:
            raise BrokerDisabled(self._mode.value)

    # -- feeding (see .intake) ---------------------------------------------------

    def restore(self, evaluations: Iterable[Evaluation]) -> list[Effect]:
        """Replace everything with the store's non-terminal ``evaluations``."""
        if self._mode is BrokerMode.DISABLED:
            raise BrokerDisabled(self._mode.value)
        self._reset()
        effects = bulk_load(self._held, evaluations, self._clock(), self._wall())
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
        return self._emit(self._intake.enqueue_all(items, self._clock()))

    def apply(self, evaluation: Evaluation) -> list[Effect]:
        """Follow one event-stream update of an evaluation (leader and standby)."""
        if self._mode is BrokerMode.DISABLED:
            return []
        return self._emit(self._intake.apply(evaluation, self._clock()))

    def forget(self, eval_id: str) -> None:
        """The evaluation was deleted from the store (or became terminal)."""
        if self._mode is not BrokerMode.DISABLED:
            self._intake.forget(eval_id, self._clock())

    # -- workers (see .delivery) -------------------------------------------------

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
        return self._deliveries.dequeue_many(schedulers, limit, self._term)

    def settle_ack(self, eval_id: str, token: str) -> list[Effect]:
        """The worker finished (its outcome is written, see
        :mod:`.settlement`); the job's pending evaluation becomes ready."""
        self._require_leader()
        return self._emit(self._deliveries.release_acked(eval_id, token))

    def take_back(self, eval_id: str, token: str) -> list[Effect]:
        """The worker gave up (a Nack); redeliver after a delay, or fail at the limit."""
        self._require_leader()
        return self._emit(self._deliveries.take_back_outstanding(eval_id, token))

    def outstanding_reset(self, eval_id: str, token: str) -> None:
        """Restart the nack timer of an evaluation still being processed."""
        self._require_leader()
        self._deliveries.outstanding_reset(eval_id, token)

    def check_outstanding(self, eval_id: str, token: str) -> Evaluation:
        """The evaluation ``token`` currently holds; raises as ``settle_ack`` would.

        Changes nothing: the shell writes an Ack's outcome first and acks
        the core only once the write is durable.
        """
        self._require_leader()
        return self._deliveries.outstanding(eval_id, token).eval

    def release_failed(self, eval_id: str) -> None:
        """The shell wrote the failure (MarkFailed): free the job's slot."""
        self._require_leader()
        self._deliveries.release_failed(eval_id)

    # -- operator and unblock --------------------------------------------------

    def cancel(self, eval_id: str, reason: str = "") -> list[Effect]:
        """CancelEvaluation: remove a queued evaluation unless a worker has it."""
        self._require_leader()
        rec = self._held.records.get(eval_id)
        if rec is None or rec.state is None:
            raise UnknownEvaluation(eval_id)
        if rec.state is EvalState.UNACKED:
            raise EvaluationInFlight(eval_id)
        self._held.release(rec, self._clock())
        self._held.cancelled += 1
        description = "canceled by an operator" + (f": {reason}" if reason else "")
        return [MarkCanceled(rec.key[0], eval_id, description, rec.eval)]

    # -- timers ----------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When ``tick`` next has work (monotonic seconds), or None."""
        if self._mode is BrokerMode.DISABLED:
            return None
        return self._held.timers.next_deadline()

    def tick(self, now: float | None = None) -> list[Effect]:
        """Fire every timer due at ``now`` (default: the clock): nack
        timeouts take evaluations back, ended delays make them ready."""
        if self._mode is BrokerMode.DISABLED:
            return []
        if now is None:
            now = self._clock()
        held = self._held
        effects: list[Effect] = []
        while (rec := held.timers.pop_due(now)) is not None:
            if rec.state is EvalState.UNACKED:
                effects.extend(self._deliveries.expire(rec, now))
            elif rec.state is EvalState.WAITING:
                effects.extend(held.admit(rec, now))
        held.timers.compact(held.counts[EvalState.UNACKED] + held.counts[EvalState.WAITING])
        return self._emit(effects)

    # -- introspection ---------------------------------------------------------

    def ready_schedulers(self) -> frozenset[str]:
        """Scheduler types a ``dequeue`` could serve right now."""
        if self._mode is not BrokerMode.LEADER or self._paused:
            return frozenset()
        return self._held.ready.schedulers()

    def get(self, eval_id: str) -> EvalRecord | None:
        return self._held.records.get(eval_id)

    def iter_queue(
        self, after: tuple[int, str] | None = None, *, descending: bool = False
    ) -> Iterator[QueueEntry]:
        """Held evaluations in create-index order, strictly after ``after``."""
        return self._held.order.iterate(self._held.records, after, descending=descending)

    def stats(self) -> BrokerStats:
        held = self._held
        deliveries = self._deliveries
        return snapshot(
            self._mode.value,
            self._paused,
            held.counts,
            {name: held.ready.count(name) for name in held.ready.schedulers()},
            held.unacked_by,
            cancelled=held.cancelled,
            failed=deliveries.failed_total,
            ready_wait=deliveries.ready_wait,
            processing=deliveries.processing,
        )

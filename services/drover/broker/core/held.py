"""The broker's held evaluations and the transitions between their states.

:class:`HeldEvaluations` is the data of :class:`drover.broker.core.broker.EvalBroker`
without its policy (modes, tokens, delivery limit): the record table, the
per-job places, the ready queues, the timer heap, the create-order index and
O(1) counters. Every state change goes through :meth:`HeldEvaluations.set_state`
so that counters, tickets (lazy heap deletion) and heaps cannot disagree.

Per-job serialization (Nomad's "one evaluation per job in flight"): a job
has one *slot* (the evaluation ready, unacked, waiting for redelivery after
a nack, or failed), at most one *pending* evaluation and at most one
*blocked* one. Supersede rule: when a second pending evaluation arrives for
a job, the two are compared at once (higher priority wins, then the newer)
and the loser is cancelled through a :class:`CancelSuperseded` effect. This
is Nomad's rule at ack time ("the best pending evaluation becomes ready, the
others are cancelled") applied eagerly, so a backlog of redundant
evaluations never builds up; the kept evaluation is delivered with a wait
index covering every evaluation of the job seen, so it does their work.
The in-flight slot itself is never superseded: a worker may be on it.
Blocked evaluations follow the same one-per-job rule by create index.
"""

from __future__ import annotations

import itertools

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.effects import CancelSuperseded, Effect
from drover.broker.core.listing import QueueOrder
from drover.broker.core.queues import ReadyQueues, TimerHeap
from drover.broker.core.record import EvalRecord, EvalState, JobEntry, JobKey

__all__ = ["HeldEvaluations"]

READY = EvalState.READY
UNACKED = EvalState.UNACKED
PENDING = EvalState.PENDING
BLOCKED = EvalState.BLOCKED


class HeldEvaluations:
    def __init__(self) -> None:
        self.records: dict[str, EvalRecord] = {}
        self.jobs: dict[JobKey, JobEntry] = {}
        self.ready = ReadyQueues()
        self.timers = TimerHeap()
        self.order = QueueOrder()
        self.counts: dict[EvalState, int] = dict.fromkeys(EvalState, 0)
        self.unacked_by: dict[str, int] = {}
        # Jobs with a pending / a blocked evaluation, so that a promotion or
        # an unblock does not scan every job.
        self.pending_jobs: set[JobKey] = set()
        self.blocked_jobs: set[JobKey] = set()
        self.tickets = itertools.count(1)
        self.cancelled = 0

    # -- records ---------------------------------------------------------------

    def hold(self, evaluation: Evaluation) -> EvalRecord:
        """Register a new record (no state yet) and its job."""
        key = (evaluation.namespace, evaluation.job_id)
        rec = EvalRecord(
            evaluation,
            evaluation.id,
            key,
            evaluation.type,
            evaluation.priority,
            evaluation.create_index,
        )
        self.records[rec.id] = rec
        job = self.jobs.get(key)
        if job is None:
            job = self.jobs[key] = JobEntry()
        job.refs += 1
        if evaluation.modify_index > job.max_index:
            job.max_index = evaluation.modify_index
        self.order.add(rec)
        return rec

    def set_state(
        self, rec: EvalRecord, state: EvalState | None, now: float, deadline: float | None = None
    ) -> None:
        """Move ``rec`` to ``state`` (None: released), keeping everything in step.

        A READY record is pushed on its ready queue; a ``deadline`` puts it
        on the timer heap. The new ticket invalidates any older heap entry.
        """
        old = rec.state
        rec.ticket = next(self.tickets)
        if old is not None:
            self.counts[old] -= 1
            if old is READY:
                self.ready.discard(rec)
            elif old is UNACKED:
                self.unacked_by[rec.scheduler] -= 1
        rec.state = state
        rec.since = now
        if state is None:
            return
        self.counts[state] += 1
        if state is READY:
            self.ready.push(rec)
        elif state is UNACKED:
            self.unacked_by[rec.scheduler] = self.unacked_by.get(rec.scheduler, 0) + 1
        if deadline is not None:
            self.timers.push(deadline, rec)

    def drop(self, rec: EvalRecord, now: float) -> JobEntry:
        """Forget ``rec`` entirely, with no promotion; returns its job entry."""
        self.set_state(rec, None, now)
        del self.records[rec.id]
        job = self.jobs[rec.key]
        if job.slot is rec:
            job.slot = None
        elif job.pending is rec:
            job.pending = None
            self.pending_jobs.discard(rec.key)
        elif job.blocked is rec:
            job.blocked = None
            self.blocked_jobs.discard(rec.key)
        job.refs -= 1
        if job.refs == 0:
            del self.jobs[rec.key]
        return job

    def release(self, rec: EvalRecord, now: float) -> None:
        """Forget ``rec``; if it held its job's slot, the pending one moves up."""
        was_slot = self.jobs[rec.key].slot is rec
        job = self.drop(rec, now)
        if was_slot:
            self._promote(job, now)

    def wait_index(self, rec: EvalRecord) -> int:
        return max(self.jobs[rec.key].max_index, rec.eval.modify_index)

    def observe_index(self, rec: EvalRecord, modify_index: int) -> None:
        job = self.jobs[rec.key]
        if modify_index > job.max_index:
            job.max_index = modify_index

    # -- placement -------------------------------------------------------------

    def admit(self, rec: EvalRecord, now: float) -> list[Effect]:
        """Make ``rec`` ready if its job's slot is free (or its own), else pending."""
        job = self.jobs[rec.key]
        if job.slot is None or job.slot is rec:
            job.slot = rec
            self.set_state(rec, READY, now)
            return []
        current = job.pending
        if current is None:
            job.pending = rec
            self.pending_jobs.add(rec.key)
            self.set_state(rec, PENDING, now)
            return []
        if rec.supersedes(current):
            self.drop(current, now)
            job.pending = rec
            self.pending_jobs.add(rec.key)
            self.set_state(rec, PENDING, now)
            return [self.superseded(current, rec.id)]
        self.drop(rec, now)
        return [self.superseded(rec, current.id)]

    def block(self, rec: EvalRecord, now: float) -> list[Effect]:
        """Hold ``rec`` as its job's blocked evaluation; the older of two is cancelled."""
        job = self.jobs[rec.key]
        current = job.blocked
        effects: list[Effect] = []
        if current is not None and current is not rec:
            if rec.latest_index < current.latest_index:
                self.drop(rec, now)
                return [self.superseded(rec, current.id)]
            self.drop(current, now)
            effects.append(self.superseded(current, rec.id))
        job.blocked = rec
        self.blocked_jobs.add(rec.key)
        self.set_state(rec, BLOCKED, now)
        return effects

    def unblock(self, rec: EvalRecord, now: float) -> list[Effect]:
        """Move a BLOCKED record to the ready path (ready or pending)."""
        job = self.jobs[rec.key]
        if job.blocked is rec:
            job.blocked = None
            self.blocked_jobs.discard(rec.key)
        return self.admit(rec, now)

    def untrack_blocked(self, completed: Evaluation, now: float) -> list[Effect]:
        """A job's evaluation completed after its blocked one was created:
        the job got placed, so the blocked evaluation is no longer tracked
        (Nomad's Untrack: nothing is written, the evaluation keeps its stored
        status; a leader restoring it, or capacity unblocking it, only runs a
        scheduler that finds nothing to do). A blocked evaluation the completed
        one created (its ``previous_eval``, or the ack's ``blocked_eval``: in
        one txn with it, possibly read after it) is its outcome, not a sign
        the job got placed: it stays (Nomad
        untracks only on an evaluation without failed allocations), so the
        job's next blocked one supersedes it (cancelled) instead of leaving
        it stored blocked and untracked for ever. Same revision means same
        transaction: the same outcome, and it stays too."""
        if not self.blocked_jobs:
            return []  # (every completed evaluation asks: most often, none blocked)
        job = self.jobs.get((completed.namespace, completed.job_id))
        blocked = job.blocked if job is not None else None
        if blocked is None or blocked.id == completed.id or completed.blocked_eval or (
                blocked.eval.previous_eval == completed.id):
            return []
        if completed.modify_index <= blocked.create_index:
            return []
        self.drop(blocked, now)
        return []

    def collapse(self, key: JobKey, now: float) -> list[Effect]:
        """Keep one of a job's READY slot and pending evaluation (promotion, restore).

        Nobody is working on a READY slot yet, so the better of the two
        (the supersede rule) is enough.
        """
        job = self.jobs.get(key)
        if job is None or job.pending is None:
            return []
        slot, pending = job.slot, job.pending
        if slot is None or slot.state is not READY:
            return []
        if pending.supersedes(slot):
            self.drop(slot, now)
            self._promote(job, now)
            return [self.superseded(slot, pending.id)]
        self.drop(pending, now)
        return [self.superseded(pending, slot.id)]

    def _promote(self, job: JobEntry, now: float) -> None:
        nxt = job.pending
        if nxt is None:
            return
        job.pending = None
        self.pending_jobs.discard(nxt.key)
        job.slot = nxt
        self.set_state(nxt, READY, now)

    def superseded(self, loser: EvalRecord, by: str) -> CancelSuperseded:
        """The effect cancelling ``loser`` (already dropped) in favour of ``by``."""
        self.cancelled += 1
        return CancelSuperseded(loser.key[0], loser.key[1], (loser.id,), by, (loser.eval,))

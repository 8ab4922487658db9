"""Bulk load of the broker from the state store: one pass, then heapify.

A new leader (or a standby catching up) rebuilds the broker from every
non-terminal evaluation in the store. With a million of them this must not
do per-item heavy work, so it bypasses the incremental transitions: one
pass reads each evaluation's fields once, places it, and appends ready and
timer entries to plain lists; one ``heapify`` per list follows and the
counters are set from totals. The create-order index is built lazily by
the first listing.

Placement on restore: no evaluation is in flight (tokens died with the old
leader), so per job the best pending evaluation (the supersede rule: higher
priority, then newer) becomes ready and every other pending one is
cancelled as superseded by it, as at an ack. The old leader's unacked
evaluations are stored as pending, so they are deliverable at once.
Evaluations whose ``wait_until`` is in the future wait on the timer heap;
blocked ones are held one per job (the newest; older ones are cancelled).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.core.effects import CancelSuperseded, Effect
from drover.broker.core.held import HeldEvaluations
from drover.broker.core.queues import ReadyEntry, TimerEntry
from drover.broker.core.record import EvalRecord, EvalState, JobEntry, JobKey

__all__ = ["bulk_load"]

_PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
_BLOCKED = EvaluationStatus.EVALUATION_STATUS_BLOCKED
_UNSPECIFIED = EvaluationStatus.EVALUATION_STATUS_UNSPECIFIED


def bulk_load(
    held: HeldEvaluations, evaluations: Iterable[Evaluation], now: float, wall_now: float
) -> list[Effect]:
    """Fill an empty ``held`` from ``evaluations``; returns the cancellations."""
    records: dict[str, EvalRecord] = {}
    jobs: dict[JobKey, JobEntry] = {}
    ready_lists: dict[str, list[ReadyEntry]] = {}
    # Ready entries invalidated by a better evaluation of the same job.
    ready_stale: dict[str, int] = {}
    delayed: list[TimerEntry] = []
    slot_losers: dict[JobKey, list[Evaluation]] = {}
    blocked_losers: dict[JobKey, list[Evaluation]] = {}
    blocked_keys: set[JobKey] = set()
    ready_state, waiting_state, blocked_state = (
        EvalState.READY,
        EvalState.WAITING,
        EvalState.BLOCKED,
    )
    ticket = next(held.tickets)
    blocked_count = 0
    # The loop is the hot path of a failover: locals only, each field read
    # once, no method calls beyond the unavoidable.
    for ev in evaluations:
        status = ev.status
        if status != _PENDING and status != _BLOCKED and status != _UNSPECIFIED:
            continue
        eval_id = ev.id
        key = (ev.namespace, ev.job_id)
        ticket += 1
        rec = EvalRecord(ev, eval_id, key, ev.type, ev.priority, ev.create_index, now)
        rec.ticket = ticket
        if records.setdefault(eval_id, rec) is not rec:
            continue
        job = jobs.get(key)
        if job is None:
            job = jobs[key] = JobEntry()
        modify_index = ev.modify_index
        if modify_index > job.max_index:
            job.max_index = modify_index
        if status == _BLOCKED:
            current = job.blocked
            if current is not None:
                if rec.latest_index < current.latest_index:
                    blocked_losers.setdefault(key, []).append(ev)
                    del records[eval_id]
                    continue
                blocked_losers.setdefault(key, []).append(current.eval)
                _forget(records, job, current)
                blocked_count -= 1
            job.blocked = rec
            blocked_keys.add(key)
            rec.state = blocked_state
            blocked_count += 1
        elif ev.HasField("wait_until") and (
            due := ev.wait_until.seconds + ev.wait_until.nanos * 1e-9 - wall_now
        ) > 0:
            rec.state = waiting_state
            delayed.append((now + due, ticket, rec))
        else:
            current = job.slot
            if current is not None:
                if not rec.supersedes(current):
                    slot_losers.setdefault(key, []).append(ev)
                    del records[eval_id]
                    continue
                slot_losers.setdefault(key, []).append(current.eval)
                _forget(records, job, current)
                ready_stale[current.scheduler] = ready_stale.get(current.scheduler, 0) + 1
            job.slot = rec
            rec.state = ready_state
            entries = ready_lists.get(rec.scheduler)
            if entries is None:
                entries = ready_lists[rec.scheduler] = []
            entries.append((-rec.priority, rec.create_index, ticket, rec))
        job.refs += 1

    held.tickets = itertools.count(ticket + 1)
    held.records = records
    held.jobs = jobs
    held.blocked_jobs = blocked_keys
    ready_live = {
        name: len(entries) - ready_stale.get(name, 0) for name, entries in ready_lists.items()
    }
    held.ready.load(ready_lists, ready_live)
    held.timers.load(delayed)
    held.order.invalidate()
    counts = held.counts
    counts[EvalState.READY] = sum(ready_live.values())
    counts[EvalState.WAITING] = len(delayed)
    counts[EvalState.BLOCKED] = blocked_count

    effects: list[Effect] = []
    for losers_by_job, winner_of in ((slot_losers, "slot"), (blocked_losers, "blocked")):
        for key, losers in losers_by_job.items():
            winner: EvalRecord = getattr(jobs[key], winner_of)
            held.cancelled += len(losers)
            effects.append(CancelSuperseded(
                key[0], key[1], tuple(e.id for e in losers), winner.id, tuple(losers)))
    return effects


def _forget(records: dict[str, EvalRecord], job: JobEntry, rec: EvalRecord) -> None:
    # A record displaced during the pass: its heap entry goes stale.
    del records[rec.id]
    job.refs -= 1
    rec.ticket = -1
    rec.state = None

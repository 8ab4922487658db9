"""Nomad's reschedule policy: defaults, validation, delays and eligibility (pure).

A task group's ``reschedule`` block (:class:`ReschedulePolicy` in the proto)
decides whether and when a *failed* allocation is replaced. Every field
left unset takes the job type's default, as Nomad's ``Canonicalize`` merges
the block over ``DefaultServiceJobReschedulePolicy`` /
``DefaultBatchJobReschedulePolicy``:

- service: delay 30s, exponential, max_delay 1h, unlimited (attempts 0,
  interval 0);
- batch: attempts 1 in an interval of 24h, delay 5s, constant (max_delay 0,
  not unlimited);
- system: no policy; never rescheduled.

The rules, with times as seconds on any clock the caller passes (the
"fail time" is when the allocation's tasks finished):

- :func:`next_delay` is Nomad's ``Allocation.NextDelay``: the policy's
  delay before any reschedule; then constant stays, exponential doubles
  the last event's delay, fibonacci adds the last two (restarting the
  series after a reset); exponential and fibonacci are capped at
  ``max_delay``, and once capped the delay *resets* to ``delay`` when the
  allocation ran longer than ``max_delay`` after its last reschedule.
- :func:`eligible` is ``RescheduleTracker.RescheduleEligible``: unlimited,
  or fewer than ``attempts`` reschedules within ``interval`` before the
  fail time.
- :func:`next_reschedule_time` is ``NextRescheduleTime``: fail time plus
  the next delay, and whether it may happen (a limited policy also needs
  the delay to be shorter than the interval).
- :func:`tracker_for_replacement` is ``updateRescheduleTracker``: the
  replacement carries the failed allocation's events (those within the
  interval, or the last 5 when unlimited) plus one for this reschedule.
- :func:`batch_later` groups reschedules due later into follow-up
  evaluations: times within 5s of a batch's first share it
  (``batchedFailedAllocWindowSize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from drover.api.types.v1 import allocation_pb2, job_pb2

CONSTANT, EXPONENTIAL, FIBONACCI = "constant", "exponential", "fibonacci"
DELAY_FUNCTIONS = (CONSTANT, EXPONENTIAL, FIBONACCI)

#: Nomad's ReschedulePolicyMinDelay and ReschedulePolicyMinInterval.
MIN_DELAY = 5.0
MIN_INTERVAL = 15.0
#: An unlimited policy's replacement keeps this many past events.
MAX_PAST_EVENTS = 5
#: A reschedule due within this many seconds is done now (rescheduleWindowSize).
NOW_WINDOW = 1.0
#: Reschedules due within this many seconds of each other share one
#: follow-up evaluation (batchedFailedAllocWindowSize).
LATER_BATCH_WINDOW = 5.0

HOUR = 3600.0


@dataclass(frozen=True)
class Policy:
    """A resolved reschedule policy (every field set; durations in seconds)."""

    attempts: int = 0
    interval: float = 0.0
    delay: float = 0.0
    delay_function: str = CONSTANT
    max_delay: float = 0.0
    unlimited: bool = False

    @property
    def enabled(self) -> bool:
        return self.attempts > 0 or self.unlimited


SERVICE_DEFAULT = Policy(attempts=0, interval=0.0, delay=30.0, delay_function=EXPONENTIAL,
                         max_delay=HOUR, unlimited=True)
BATCH_DEFAULT = Policy(attempts=1, interval=24 * HOUR, delay=5.0, delay_function=CONSTANT,
                       max_delay=0.0, unlimited=False)


def default_for(job_type: int) -> Policy | None:
    """The job type's default policy; None for system jobs (never rescheduled)."""
    if job_type == job_pb2.JOB_TYPE_BATCH:
        return BATCH_DEFAULT
    if job_type == job_pb2.JOB_TYPE_SYSTEM:
        return None
    return SERVICE_DEFAULT  # service, and unspecified (the state stores it as service)


def _secs(d: Duration) -> float:
    return d.seconds + d.nanos / 1e9


def resolve(job_type: int, block: job_pb2.ReschedulePolicy | None) -> Policy | None:
    """The block's set fields merged over the type's default (Nomad's Merge)."""
    base = default_for(job_type)
    if base is None or block is None:
        return base
    return replace(
        base,
        attempts=block.attempts if block.HasField("attempts") else base.attempts,
        interval=_secs(block.interval) if block.HasField("interval") else base.interval,
        delay=_secs(block.delay) if block.HasField("delay") else base.delay,
        delay_function=(block.delay_function if block.HasField("delay_function")
                        else base.delay_function),
        max_delay=_secs(block.max_delay) if block.HasField("max_delay") else base.max_delay,
        unlimited=block.unlimited if block.HasField("unlimited") else base.unlimited,
    )


def policy_for(job: job_pb2.Job | None, group: str) -> Policy | None:
    """The resolved policy of ``group`` in ``job`` (None: never rescheduled)."""
    if job is None:
        return None
    tg = next((g for g in job.task_groups if g.name == group), None)
    if tg is None:
        return None
    return resolve(job.type, tg.reschedule if tg.HasField("reschedule") else None)


def _fmt(seconds: float) -> str:
    if seconds >= HOUR and seconds % HOUR == 0:
        return f"{seconds / HOUR:g}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def problems(p: Policy) -> list[str]:
    """What is wrong with ``p`` by Nomad's ``ReschedulePolicy.Validate``
    (a disabled policy is always valid); empty when nothing."""
    if not p.enabled:
        return []
    out = []
    if p.attempts > 0:
        if p.interval <= 0:
            out.append("interval must be set when attempts > 0")
        if p.unlimited:
            out.append(f"attempts = {p.attempts} with unlimited = true is ambiguous"
                       " (set unlimited: false to limit attempts)")
    delays_ok = True
    if p.delay < MIN_DELAY:
        out.append(f"delay cannot be less than {_fmt(MIN_DELAY)} (got {_fmt(p.delay)})")
        delays_ok = False
    if p.delay_function not in DELAY_FUNCTIONS:
        out.append(f"delay_function {p.delay_function!r} is not one of "
                   f"{', '.join(DELAY_FUNCTIONS)}")
        delays_ok = False
    elif p.delay_function != CONSTANT:
        if p.max_delay < MIN_DELAY:
            out.append(f"max_delay cannot be less than {_fmt(MIN_DELAY)} "
                       f"(got {_fmt(p.max_delay)})")
            delays_ok = False
        if p.max_delay < p.delay:
            out.append(f"max_delay cannot be less than delay {_fmt(p.delay)} "
                       f"(got {_fmt(p.max_delay)})")
            delays_ok = False
    if not p.unlimited:
        if p.interval < MIN_INTERVAL:
            out.append(f"interval cannot be less than {_fmt(MIN_INTERVAL)} "
                       f"(got {_fmt(p.interval)})")
        elif delays_ok:
            viable, possible, needed = viable_attempts(p)
            if not viable:
                out.append(f"only {possible} attempts fit in interval {_fmt(p.interval)} with "
                           f"delay {_fmt(p.delay)} and delay_function {p.delay_function!r}; "
                           f"set interval to at least {_fmt(needed)} for {p.attempts} attempts")
    return out


def viable_attempts(p: Policy) -> tuple[bool, int, float]:
    """Whether ``attempts`` reschedules fit in ``interval``: (fits, how many
    do, the interval they need), by Nomad's ``viableAttempts``."""
    possible, needed = 0, 0.0
    if p.delay_function == CONSTANT:
        needed = p.attempts * p.delay
        if p.interval < needed:
            return False, int(p.interval // p.delay), needed
        return True, 0, needed
    if p.delay_function == EXPONENTIAL:
        for i in range(p.attempts):
            step = (2 ** i) * p.delay
            if step > p.max_delay:
                needed += p.max_delay  # past the cap the delays add up
            else:
                needed = step
            if needed < p.interval:
                possible += 1
        return possible >= p.attempts, possible, needed
    slots = [p.delay, p.delay]  # fibonacci
    capped = False
    for i in range(2, p.attempts):
        if capped:
            nxt = slots[i - 1] + p.max_delay
        else:
            nxt = slots[i - 1] + slots[i - 2]
            if nxt > p.max_delay:
                nxt, capped = p.max_delay, True
        slots.append(nxt)
    needed = slots[-1]
    if p.interval < needed:
        possible = next((i for i, s in enumerate(slots) if s > p.interval), 0)
        return False, possible, needed
    return True, 0, needed


@dataclass(frozen=True)
class Event:
    """One past reschedule (Nomad's RescheduleEvent; times in seconds)."""

    time: float
    prev_alloc_id: str = ""
    prev_node_id: str = ""
    delay: float = 0.0


def next_delay(p: Policy | None, events: Sequence[Event], fail_time: float) -> float:
    """The delay before the next reschedule (module doc; ``NextDelay``)."""
    if p is None:
        return 0.0
    if not events:
        return p.delay
    last = events[-1]
    if p.delay_function == EXPONENTIAL:
        delay = last.delay * 2
    elif p.delay_function == FIBONACCI:
        if len(events) < 2:
            delay = p.delay
        elif events[-2].delay == p.max_delay and last.delay == p.delay:
            delay = last.delay  # the series was reset: start it again
        else:
            delay = last.delay + events[-2].delay
    else:
        return p.delay
    if p.max_delay > 0 and delay > p.max_delay:
        delay = p.max_delay
        # It ran for longer than the cap since its last reschedule: start over.
        if fail_time - last.time > delay:
            delay = p.delay
    return delay


def _attempted(p: Policy, events: Sequence[Event], fail_time: float) -> int:
    return sum(1 for e in events if fail_time - e.time < p.interval)


def eligible(p: Policy | None, events: Sequence[Event], fail_time: float) -> bool:
    """Whether another reschedule is allowed (``RescheduleEligible``)."""
    if p is None or not p.enabled:
        return False
    if p.unlimited:
        return True
    if not events:
        return True
    return _attempted(p, events, fail_time) < p.attempts


def next_reschedule_time(p: Policy | None, events: Sequence[Event],
                         fail_time: float) -> tuple[float, bool]:
    """(when, allowed) for the next reschedule (``NextRescheduleTime``)."""
    if p is None or not p.enabled or fail_time <= 0:
        return 0.0, False
    delay = next_delay(p, events, fail_time)
    at = fail_time + delay
    if p.unlimited:
        return at, True
    if not events:
        return at, True
    return at, _attempted(p, events, fail_time) < p.attempts and delay < p.interval


def tracker_for_replacement(p: Policy | None, prev_events: Sequence[Event], prev_id: str,
                            prev_node: str, fail_time: float, now: float) -> list[Event]:
    """The events a replacement of ``prev_id`` carries (module doc)."""
    kept: list[Event]
    if p is not None and p.attempts > 0:
        kept = [e for e in prev_events if p.interval > 0 and now - e.time <= p.interval]
    else:
        kept = list(prev_events[-MAX_PAST_EVENTS:])
    return [*kept, Event(now, prev_id, prev_node, next_delay(p, prev_events, fail_time))]


def batch_later(due: Sequence[tuple[float, str]]) -> list[tuple[float, list[str]]]:
    """``(time, alloc id)`` pairs grouped into follow-up evaluations: sorted
    by time, each batch due at its first time and holding every one due
    within :data:`LATER_BATCH_WINDOW` of it."""
    out: list[tuple[float, list[str]]] = []
    for at, alloc_id in sorted(due):
        if out and at - out[-1][0] <= LATER_BATCH_WINDOW:
            out[-1][1].append(alloc_id)
        else:
            out.append((at, [alloc_id]))
    return out


# -- allocations as protos ----------------------------------------------------

def _ts(t: Timestamp) -> float:
    return t.seconds + t.nanos / 1e9


def timestamp(seconds: float) -> Timestamp:
    out = Timestamp()
    out.FromNanoseconds(round(seconds * 1e9))
    return out


def duration(seconds: float) -> Duration:
    out = Duration()
    out.FromNanoseconds(round(seconds * 1e9))
    return out


def events_of(a: allocation_pb2.Allocation) -> list[Event]:
    return [Event(_ts(e.reschedule_time), e.prev_alloc_id, e.prev_node_id, _secs(e.delay))
            for e in a.reschedule_tracker.events]


def fail_time(a: allocation_pb2.Allocation) -> float:
    """When its tasks finished (``LastEventTime``): ``finished_at``, else the
    last modification."""
    if a.HasField("finished_at"):
        return _ts(a.finished_at)
    return _ts(a.modify_time)


def tracker_proto(events: Sequence[Event]) -> allocation_pb2.RescheduleTracker:
    return allocation_pb2.RescheduleTracker(events=[
        allocation_pb2.RescheduleEvent(reschedule_time=timestamp(e.time),
                                       prev_alloc_id=e.prev_alloc_id,
                                       prev_node_id=e.prev_node_id, delay=duration(e.delay))
        for e in events])


def alloc_next_time(p: Policy | None, a: allocation_pb2.Allocation) -> tuple[float, bool]:
    """:func:`next_reschedule_time` of a failed allocation."""
    return next_reschedule_time(p, events_of(a), fail_time(a))

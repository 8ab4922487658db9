"""The broker's lightweight bookkeeping per evaluation and per job.

One :class:`EvalRecord` per held evaluation (slotted: a million of them must
fit and be built quickly on restore) and one :class:`JobEntry` per job with
held evaluations. Heap entries elsewhere point at records and carry the
record's ``ticket`` at push time: every state change draws a new ticket, so
an entry whose ticket no longer matches is stale and is skipped when it
surfaces (lazy deletion; no O(n) heap removals).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from drover.api.types.v1.evaluation_pb2 import Evaluation

__all__ = ["EvalRecord", "EvalState", "JobEntry", "JobKey", "QueueEntry"]

# (namespace, job_id): the same job id in two namespaces is two jobs.
JobKey = tuple[str, str]


class EvalState(enum.Enum):
    """Where the broker holds an evaluation (ListQueue's ``state``)."""

    # Deliverable now; holds its job's in-flight slot.
    READY = "ready"
    # Delivered to a worker, waiting for Ack/Nack; holds the job's slot.
    UNACKED = "unacked"
    # Waiting for its job's in-flight evaluation to finish.
    PENDING = "pending"
    # Waiting on a timer: a nack redelivery delay (holds the job's slot) or
    # ``wait_until`` (does not hold it until due).
    WAITING = "waiting"
    # Status blocked: waits for an unblock (capacity changed), one per job.
    BLOCKED = "blocked"
    # Reached the delivery limit; waits for the leader to write it failed.
    FAILED = "failed"

    # Members are singletons compared by identity: hash them by identity too,
    # in C (Enum's own __hash__ is Python code, and the broker's counters,
    # keyed by state, are touched on every state change).
    __hash__ = object.__hash__


class EvalRecord:
    """What the broker knows about one held evaluation. Read-only outside the core."""

    __slots__ = (
        "create_index",
        "deliveries",
        "eval",
        "expired_tokens",
        "id",
        "key",
        "priority",
        "scheduler",
        "since",
        "state",
        "ticket",
        "token",
    )

    def __init__(
        self,
        evaluation: Evaluation,
        eval_id: str,
        key: JobKey,
        scheduler: str,
        priority: int,
        create_index: int,
        since: float = 0.0,
    ) -> None:
        self.eval = evaluation
        self.id = eval_id
        self.key = key
        self.scheduler = scheduler
        self.priority = priority
        self.create_index = create_index
        self.state: EvalState | None = None
        # Deliveries so far (Nomad's b.evals[id]); reset when the record is
        # rebuilt from the store because the store does not know it.
        self.deliveries = 0
        self.ticket = 0
        # Monotonic time the current state began (ready -> dequeue wait,
        # dequeue -> ack processing).
        self.since = since
        self.token: str | None = None
        # Tokens of earlier deliveries, so a late Ack gets TokenExpired, not
        # the misleading TokenMismatch.
        self.expired_tokens: tuple[str, ...] = ()

    def supersedes(self, other: EvalRecord) -> bool:
        """Whether this record wins a job's single pending place over ``other``.

        Higher priority wins, then the newer (higher create index): the one
        kept runs against a snapshot at least as new as every evaluation of
        the job the broker has seen (the wait index), so it does the work of
        the ones it replaces.
        """
        if self.priority != other.priority:
            return self.priority > other.priority
        return self.create_index > other.create_index

    @property
    def latest_index(self) -> int:
        """Nomad's ``latestEvalIndex``: the later of the create index and the
        snapshot index its plan was computed at (a blocked evaluation's)."""
        return max(self.create_index, self.eval.snapshot_index)

    def __repr__(self) -> str:
        state = self.state.value if self.state else "released"
        return f"EvalRecord({self.id!r}, {state}, deliveries={self.deliveries})"


class JobEntry:
    """A job's place in the broker: one evaluation in flight, one pending, one blocked."""

    __slots__ = ("blocked", "max_index", "pending", "refs", "slot")

    def __init__(self) -> None:
        # The evaluation holding the job's in-flight slot: READY, UNACKED,
        # WAITING after a nack, or FAILED.
        self.slot: EvalRecord | None = None
        # At most one: a newcomer and the current pending evaluation are
        # compared at once and the loser is cancelled (superseded).
        self.pending: EvalRecord | None = None
        self.blocked: EvalRecord | None = None
        # Highest modify index among the job's evaluations seen since the
        # job entered the broker: the wait index handed out with a delivery.
        self.max_index = 0
        # Held records of this job in any state; the entry goes at zero.
        self.refs = 0


class QueueEntry(NamedTuple):
    """One row of :meth:`drover.broker.core.broker.EvalBroker.iter_queue`."""

    create_index: int
    id: str
    state: EvalState
    record: EvalRecord

"""Follow-up evaluations, coalesced per deployment and batched across them.

When healthy progress lets a deployment place its next batch, the watcher
asks for an evaluation. Under a wave of health updates that would be one
evaluation and one state write per allocation. The batcher turns it into at
most one pending evaluation per deployment (later requests coalesce into the
pending one: the scheduler reads the current state anyway) and one write per
batching window for all deployments, like Nomad's EvalBatcher.

A window opens with the first request after a flush and closes ``window``
seconds later; :meth:`EvalBatcher.flush_due` then returns up to ``max_batch``
evaluations (bounded so that one write stays well within etcd's 128
operations per transaction); any rest is due at once. Times are the
watcher's wall-clock seconds; a clock step only shifts a sub-second window.
Pending requests live only in the leader's memory, so the manager sends a
follow-up here only when no deployment write carries it (see
:mod:`.manager`: normally it rides in the same txn as its deployment change).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import BatcherConfig
from .effects import CreateEvaluation


@dataclass(frozen=True)
class BatcherStats:
    pending: int
    added: int
    coalesced: int
    flushed: int
    batches: int


class EvalBatcher:
    def __init__(self, config: BatcherConfig) -> None:
        self._config = config
        # Insertion-ordered, so batches go out oldest request first.
        self._pending: dict[str, CreateEvaluation] = {}
        self._opened_at: float | None = None
        self._added = 0
        self._coalesced = 0
        self._flushed = 0
        self._batches = 0

    def add(self, request: CreateEvaluation, now: float) -> bool:
        """Queue ``request``; False when it coalesced into a pending one."""
        if request.deployment_id in self._pending:
            self._coalesced += 1
            return False
        self._pending[request.deployment_id] = request
        self._added += 1
        if self._opened_at is None:
            self._opened_at = now
        return True

    def discard(self, deployment_id: str) -> bool:
        """Drop a pending request (its deployment stopped being watched)."""
        dropped = self._pending.pop(deployment_id, None) is not None
        if not self._pending:
            self._opened_at = None
        return dropped

    def next_due(self) -> float | None:
        if self._opened_at is None:
            return None
        return self._opened_at + self._config.window

    def flush_due(self, now: float) -> tuple[CreateEvaluation, ...]:
        """One batch if the window has closed by ``now``, else ``()``."""
        due = self.next_due()
        if due is None or now < due:
            return ()
        ids = list(self._pending)[: self._config.max_batch]
        batch = tuple(self._pending.pop(i) for i in ids)
        if not self._pending:
            self._opened_at = None
        self._flushed += len(batch)
        self._batches += 1
        return batch

    def stats(self) -> BatcherStats:
        return BatcherStats(
            pending=len(self._pending),
            added=self._added,
            coalesced=self._coalesced,
            flushed=self._flushed,
            batches=self._batches,
        )

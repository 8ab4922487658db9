"""Ack and AckBatch: a worker's outcome is written before the core forgets it.

:class:`AckCalls` serves the two calls for the runtime. Per ack, at one
synchronous moment of the term, it checks the token against the core
(``check_outstanding``: changes nothing), builds the write (the evaluation
as handed out with the worker's final status, compared on its
``modify_index`` so it is never re-created if deleted meanwhile, plus the
follow-ups as creates of new ids), marks the ack in flight
(:class:`~.core.settlement.AckSettlement`) and queues the write with the fence
of the term its token was issued under (``token_fence``). Only once the
write has landed is the core acked, by whichever comes first: the writer's
answer (here) or the write's echo on the event stream (the runtime's feed
sink); the other finds nothing to settle.

Invariants (leader only, at-least-once):

* nothing lives only in memory: an evaluation leaves the core only after
  its outcome is durable; a failed or cancelled write leaves it
  outstanding (its nack timer still runs);
* an outcome of an earlier term's delivery is fenced with that term and
  refused by the state service (FENCE_LOST), even from a process frozen
  between its checks;
* a write that landed after the term's writer changed (leadership lost and
  maybe regained meanwhile) is not settled here (the stream settles what
  landed), but the caller is told it landed: the outcome is durable, and
  an answer that says otherwise (NotLeader) would have a worker take a
  written ack for one that never happened;
* AckBatch: the acks are queued at one moment (one check of the term, no
  task or future per ack) and join one group commit; each succeeds or fails
  on its own, and not being the leader fails the whole call.

Async shell: awaits the fenced writer; no core state of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from drover.api.types.v1.evaluation_pb2 import EVALUATION_STATUS_BLOCKED
from drover.broker.core.broker import EvalBroker
from drover.broker.core.effects import Effect, WriteGroup
from drover.broker.core.settlement import AckLike, AckSettlement, ack_body, final_status
from drover.broker.errors import BrokerDisabled
from drover.broker.writer import FencedWriter
from drover.coord.fence import Fence
from drover.coord.guard import LeaderGuard
from drover.errors import DroverError, NotLeader

__all__ = ["AckCalls", "AckShell"]


class AckShell(Protocol):
    """What the ack calls use of the runtime (the term's writes)."""

    @property
    def writer(self) -> FencedWriter | None:
        """The current term's writer; None when not the established leader."""
        ...

    async def writer_for_call(self, wait: float = 0.0) -> FencedWriter: ...

    def token_fence(self, token: str) -> Fence | None: ...

    def after(self, effects: list[Effect]) -> None: ...


class AckCalls:
    def __init__(
        self,
        shell: AckShell,
        core: EvalBroker,
        settlement: AckSettlement,
        guard: LeaderGuard,
    ) -> None:
        self._shell = shell
        self._core = core
        self._acks = settlement
        self._guard = guard

    async def write_outcome(self, ack: AckLike) -> int:
        """The outcome's store index, once written and settled."""
        shell = self._shell
        writer = await shell.writer_for_call()
        eval_id, token = ack.eval_id, ack.token
        group, fence = self._begin(ack)
        try:
            written = writer.enqueue(group, fence)
        except DroverError:
            self._acks.written(eval_id, token)
            raise
        try:
            index = await written
        finally:
            still_ours = self._acks.written(eval_id, token)
        if still_ours and shell.writer is writer:
            shell.after(self._acks.settle(eval_id, token))
        return index

    def _begin(self, ack: AckLike) -> tuple[WriteGroup, Fence | None]:
        """Check an ack and mark it in flight (synchronous: checked and
        queued at one moment of the term); the write to queue and its fence."""
        final = final_status(ack.status)
        try:
            held = self._core.check_outstanding(ack.eval_id, ack.token)
        except BrokerDisabled:
            raise self._guard.not_leader() from None
        body = ack_body(held, final, ack.status_description)
        # An update of what was handed out (compared on its modify_index:
        # never re-created if deleted meanwhile), fenced with the term the
        # delivery was made under; follow-ups are creates of new ids.
        follow_ups = ack.follow_ups
        # Nomad's BlockedEval: the evaluation did not place everything (the
        # broker then keeps the job's blocked evaluation tracked).
        body.blocked_eval = next((f.id for f in follow_ups
                                  if f.status == EVALUATION_STATUS_BLOCKED), "")
        group = WriteGroup((body,), creates=tuple(follow_ups) if follow_ups else ())
        # The stream may bring this write back before the call returns; it
        # then acks the core itself (the runtime's ``applied``), else the
        # caller does.
        self._acks.begin(ack.eval_id, ack.token)
        return group, self._shell.token_fence(ack.token)

    async def write_outcomes(self, acks: Sequence[AckLike]) -> list[int | DroverError]:
        """Each ack's store index, or the error Ack alone would have raised."""
        shell = self._shell
        settlement = self._acks
        writer = await shell.writer_for_call()
        outcomes: list[int | DroverError] = [0] * len(acks)
        queued: list[tuple[int, AckLike]] = []
        writes: list[tuple[WriteGroup, Fence | None]] = []
        for i, ack in enumerate(acks):
            try:
                writes.append(self._begin(ack))
            except DroverError as err:
                outcomes[i] = err
                continue
            queued.append((i, ack))
        if queued:
            try:
                written = writer.enqueue_all(writes)
            except DroverError as err:
                for i, ack in queued:
                    settlement.written(ack.eval_id, ack.token)
                    outcomes[i] = err
                queued = []
        if queued:
            try:
                results = await written
            except BaseException:
                # Cancelled: the writes stand or fail on their own; the stream
                # settles the ones that land.
                for _, ack in queued:
                    settlement.written(ack.eval_id, ack.token)
                written.cancel()
                raise
            effects: list[Effect] = []
            settled = False
            for (i, ack), result in zip(queued, results, strict=True):
                still_ours = settlement.written(ack.eval_id, ack.token)
                if isinstance(result, DroverError):
                    outcomes[i] = result
                    continue
                if still_ours and shell.writer is writer:
                    effects.extend(settlement.settle(ack.eval_id, ack.token))
                    settled = True
                outcomes[i] = result
            if settled:
                shell.after(effects)
        for i, outcome in enumerate(outcomes):
            if isinstance(outcome, NotLeader) and outcome.leader is None:
                outcomes[i] = await self._guard.refusal(outcome)
        return outcomes

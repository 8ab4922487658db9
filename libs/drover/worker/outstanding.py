"""A batch's deliveries kept while the worker holds them (Nomad's
``EvalBroker.OutstandingReset``), and the batch's one ack.

The broker gives an evaluation back to the queue when its delivery was not
acked or nacked within the nack timeout (Nomad's 60 s). A worker dequeues
up to ``batch`` evaluations at once and plans them one after another, so
the last of a batch waits for the others; each SubmitPlan restarts its own
evaluation's timer (the state service checks the delivery with the broker),
but an evaluation still waiting its turn, or planned and waiting for the
batch's AckBatch, is restarted by nobody. On a loaded cluster (C1M: plans of
a second or more) the tail of a batch timed out, was delivered again and
planned twice, and the first ack then failed (EVALUATION_CHANGED).

:class:`Outstanding` restarts every held delivery's timer every ``every``
seconds, well inside the timeout, until the batch is acked; a delivery that
cannot be restarted (``TOKEN_EXPIRED``, ``NOT_OUTSTANDING``: it is no longer
this worker's) is dropped, and its plan or ack then says so. :func:`ack`
sends the batch's AckBatch, again as it was after ``UNAVAILABLE``, and
again any ack answered ``OUTCOME_UNKNOWN`` (a second answer of
NOT_OUTSTANDING or EVALUATION_EXISTS means the first landed).
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Protocol

import grpc

from drover.api.broker.v1 import broker_pb2
from drover.errors import OutcomeUnknown

log = logging.getLogger("drover.worker")

#: AckBatch attempts when the broker cannot be reached, or an ack's outcome
#: is unknown.
ACK_TRIES = 3


class BrokerCalls(Protocol):
    """What the batch's upkeep calls on the broker (its gRPC stub)."""

    @property
    def OutstandingReset(self) -> grpc.aio.UnaryUnaryMultiCallable: ...

    @property
    def AckBatch(self) -> grpc.aio.UnaryUnaryMultiCallable: ...


class Outstanding:
    """The deliveries of one batch, their nack timers restarted every
    ``every`` seconds while the batch is held (an async context)."""

    def __init__(self, broker: BrokerCalls, deliveries: dict[str, str], every: float) -> None:
        self._broker = broker
        #: eval id -> delivery token, of the deliveries still held.
        self.held = dict(deliveries)
        self._every = every
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Outstanding:
        if self._every > 0:
            self._task = asyncio.create_task(self._keep(), name="worker-outstanding-reset")
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def done(self, eval_id: str) -> None:
        """``eval_id`` is no longer held (nacked, or its delivery ended)."""
        self.held.pop(eval_id, None)

    async def _keep(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            await asyncio.gather(*(self._reset(e, t) for e, t in list(self.held.items())))

    async def _reset(self, eval_id: str, token: str) -> None:
        try:
            await self._broker.OutstandingReset(
                broker_pb2.OutstandingResetRequest(eval_id=eval_id, token=token), timeout=10)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                self.done(eval_id)  # no longer ours: its plan or ack will say so
            log.warning("outstanding reset %s: %s", eval_id, e.details() or e.code().name)


async def ack(broker: BrokerCalls, acks: list[broker_pb2.AckRequest],
              pause: float = 0.5) -> list[str]:
    """One AckBatch of ``acks``, sent again as it was after UNAVAILABLE, and
    the acks answered ``OUTCOME_UNKNOWN`` sent again in one more call
    (docs/worker-protocol.md: an ack that landed then answers
    NOT_OUTSTANDING, UNKNOWN_EVALUATION, EVALUATION_CHANGED or
    EVALUATION_EXISTS); the evaluations acked (each refusal logged with its
    reason). Left unknown after the last try, an ack's delivery runs out
    its nack timer and the evaluation is delivered again."""
    acked: list[str] = []
    todo = acks
    for attempt in range(1, ACK_TRIES + 1):
        try:
            out: broker_pb2.AckBatchResponse = await broker.AckBatch(
                broker_pb2.AckBatchRequest(acks=todo), timeout=30)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE or attempt == ACK_TRIES:
                raise
            log.warning("ack: %s; sending it again", e.details() or e.code().name)
            await asyncio.sleep(pause * attempt)
            continue
        unknown = {o.eval_id for o in out.outcomes
                   if o.reason == OutcomeUnknown.reason and attempt < ACK_TRIES}
        for o in out.outcomes:
            if not o.code:
                acked.append(o.eval_id)
            else:
                again = "; sending it again" if o.eval_id in unknown else ""
                log.warning("ack %s: %s (%s)%s", o.eval_id, o.message, o.reason, again)
        if not unknown:
            return acked
        todo = [a for a in todo if a.eval_id in unknown]
        await asyncio.sleep(pause * attempt)
    return acked

"""The EvalBrokerService gRPC servicer: request checks and proto conversion.

Thin by design: every decision is the runtime's or the core's. Errors are
:mod:`drover.errors` classes, mapped to statuses by the server's
ErrorInterceptor (NotLeader adds the ``drover-leader`` trailing metadata).

Leader only: Dequeue, Ack, AckBatch, Nack, OutstandingReset, ListQueue and
CancelEvaluation. GetBrokerStats answers on every replica (a follower shows
its hot standby, ``enabled = false``), so an operator can see that a
standby is current before a failover.
"""

from __future__ import annotations

from typing import Any

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.types.v1 import query_pb2
from drover.broker.core.broker import BrokerMode
from drover.broker.core.queue_view import QueueView
from drover.broker.core.record import EvalState
from drover.broker.core.stats import TimingSummary
from drover.broker.runtime import BrokerRuntime
from drover.errors import DroverError, InvalidArgument
from drover.rpc.errors import rpc_code

__all__ = ["BrokerServicer"]

_QUEUE_STATES = {
    EvalState.READY: broker_pb2.QUEUE_STATE_READY,
    EvalState.UNACKED: broker_pb2.QUEUE_STATE_UNACKED,
    EvalState.PENDING: broker_pb2.QUEUE_STATE_PENDING,
    EvalState.WAITING: broker_pb2.QUEUE_STATE_WAITING,
    EvalState.BLOCKED: broker_pb2.QUEUE_STATE_BLOCKED,
    EvalState.FAILED: broker_pb2.QUEUE_STATE_FAILED,
}


def _require_id(value: str, field: str) -> None:
    if not value:
        raise InvalidArgument(f"{field} is required", metadata={"field": field})


def _require_at_most(n: int, cap: int, field: str) -> None:
    if n > cap:
        raise InvalidArgument(f"{field} is {n}; at most {cap} per call (split the work)",
                              metadata={"field": field})


def _timing(summary: TimingSummary) -> broker_pb2.TimingSummary:
    return broker_pb2.TimingSummary(
        p50_ms=summary.p50 * 1e3, p99_ms=summary.p99 * 1e3, max_ms=summary.max * 1e3,
        count=summary.count,
    )


class BrokerServicer(broker_pb2_grpc.EvalBrokerServiceServicer):
    def __init__(self, runtime: BrokerRuntime) -> None:
        self.runtime = runtime
        self.queue = QueueView(runtime.core)

    async def Dequeue(self, request: Any, context: Any) -> Any:
        requested = request.timeout.ToTimedelta().total_seconds() if request.HasField(
            "timeout") else None
        timeout = self.runtime.poll_timeout(requested)
        remaining = context.time_remaining()
        if remaining is not None:
            # Answer "nothing yet" before the caller's deadline cuts us off.
            timeout = max(0.0, min(timeout, remaining - 0.05))
        limit = max(1, request.max_evaluations)
        _require_at_most(limit, self.runtime.config.max_batch, "max_evaluations")
        batch = await self.runtime.dequeue(list(request.schedulers), timeout, limit)
        if not batch:
            return broker_pb2.DequeueResponse()
        first = batch[0]
        return broker_pb2.DequeueResponse(
            evaluation=first.evaluation, token=first.token, wait_index=first.wait_index,
            additional=[
                broker_pb2.Delivery(evaluation=d.evaluation, token=d.token,
                                    wait_index=d.wait_index)
                for d in batch[1:]
            ])

    async def Ack(self, request: Any, context: Any) -> Any:
        _require_id(request.eval_id, "eval_id")
        # The AckRequest message itself (AckLike): read, never kept.
        index = await self.runtime.ack(request)
        return broker_pb2.AckResponse(index=index)

    async def AckBatch(self, request: Any, context: Any) -> Any:
        acks = request.acks
        if not acks:
            raise InvalidArgument("acks must not be empty", metadata={"field": "acks"})
        _require_at_most(len(acks), self.runtime.config.max_batch, "acks")
        seen: dict[str, int] = {}
        for i, ack in enumerate(acks):
            _require_id(ack.eval_id, f"acks[{i}].eval_id")
            if ack.eval_id in seen:
                raise InvalidArgument(
                    f"acks[{i}] acks evaluation {ack.eval_id!r} again (first at "
                    f"acks[{seen[ack.eval_id]}]); ack each evaluation once",
                    metadata={"field": f"acks[{i}].eval_id"})
            seen[ack.eval_id] = i
        # The AckRequest messages themselves (AckLike): read, never kept.
        outcomes = await self.runtime.ack_batch(acks)
        response = broker_pb2.AckBatchResponse()
        add = response.outcomes.add
        for eval_id, outcome in zip(seen, outcomes, strict=True):
            if isinstance(outcome, DroverError):
                add(eval_id=eval_id, code=rpc_code(outcome), reason=outcome.reason,
                    message=outcome.message)
            else:
                add(eval_id=eval_id, index=outcome)
        return response

    async def Nack(self, request: Any, context: Any) -> Any:
        _require_id(request.eval_id, "eval_id")
        await self.runtime.nack(request.eval_id, request.token)
        return broker_pb2.NackResponse()

    async def OutstandingReset(self, request: Any, context: Any) -> Any:
        _require_id(request.eval_id, "eval_id")
        await self.runtime.outstanding_reset(request.eval_id, request.token)
        return broker_pb2.OutstandingResetResponse()

    async def GetBrokerStats(self, request: Any, context: Any) -> Any:
        runtime = self.runtime
        s = runtime.core.stats()
        term = runtime.term
        stats = broker_pb2.BrokerStats(
            total_ready=s.total_ready, total_unacked=s.total_unacked,
            total_pending=s.total_pending, total_waiting=s.total_waiting,
            total_blocked=s.total_blocked, total_cancelled=s.total_cancelled,
            total_failed=s.total_failed,
            ready_wait=_timing(s.ready_wait), processing=_timing(s.processing),
            enabled=runtime.core.mode is BrokerMode.LEADER and term is not None,
            leader_term=term.revision if term is not None else 0,
        )
        for name, per in s.by_scheduler.items():
            stats.by_scheduler[name].ready = per.ready
            stats.by_scheduler[name].unacked = per.unacked
        return broker_pb2.GetBrokerStatsResponse(stats=stats, meta=self._meta())

    async def ListQueue(self, request: Any, context: Any) -> Any:
        await self.runtime.require_leader()
        page = self.queue.page(request)
        return broker_pb2.ListQueueResponse(
            evaluations=[
                broker_pb2.QueuedEvaluation(
                    evaluation=entry.record.eval, state=_QUEUE_STATES[entry.state],
                    deliveries=entry.record.deliveries)
                for entry in page.items
            ],
            next_page_token=page.next_page_token,
            meta=self._meta(),
        )

    async def CancelEvaluation(self, request: Any, context: Any) -> Any:
        _require_id(request.eval_id, "eval_id")
        index = await self.runtime.cancel(request.eval_id, request.reason)
        return broker_pb2.CancelEvaluationResponse(index=index)

    def _meta(self) -> query_pb2.QueryMeta:
        runtime = self.runtime
        return query_pb2.QueryMeta(index=runtime.feed.applied_index,
                                   known_leader=runtime.leader_address is not None)

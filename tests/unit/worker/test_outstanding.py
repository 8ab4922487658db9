"""A batch's held deliveries keep their nack timers (Nomad's
OutstandingReset) until acked; one that is no longer the worker's is
dropped; AckBatch is sent again after UNAVAILABLE."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from drover.api.broker.v1 import broker_pb2
from drover.worker.outstanding import Outstanding, ack


class _Failed(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._code.name


class _Broker:
    """The two broker calls, answering as told."""

    def __init__(self, expired: set[str], ack_failures: int = 0,
                 unknown: dict[str, int] | None = None) -> None:
        self.resets: list[tuple[str, str]] = []
        self.expired = expired
        self.acks = 0
        self.ack_failures = ack_failures
        #: Evaluation -> how many of its acks are answered OUTCOME_UNKNOWN.
        self.unknown = dict(unknown or {})
        self.sent: list[list[str]] = []

    async def OutstandingReset(self, req: Any, timeout: float) -> Any:  # noqa: ASYNC109
        self.resets.append((req.eval_id, req.token))
        if req.eval_id in self.expired:
            raise _Failed(grpc.StatusCode.FAILED_PRECONDITION)
        return broker_pb2.OutstandingResetResponse()

    async def AckBatch(self, req: Any, timeout: float) -> Any:  # noqa: ASYNC109
        self.acks += 1
        self.sent.append([a.eval_id for a in req.acks])
        if self.acks <= self.ack_failures:
            raise _Failed(grpc.StatusCode.UNAVAILABLE)
        return broker_pb2.AckBatchResponse(outcomes=[self._outcome(a.eval_id) for a in req.acks])

    def _outcome(self, eval_id: str) -> broker_pb2.AckOutcome:
        if self.unknown.get(eval_id, 0) > 0:
            self.unknown[eval_id] -= 1
            return broker_pb2.AckOutcome(eval_id=eval_id, code=grpc.StatusCode.UNAVAILABLE.value[0],
                                         reason="OUTCOME_UNKNOWN", message="may have landed")
        return broker_pb2.AckOutcome(eval_id=eval_id, index=7)


async def test_held_deliveries_are_reset_until_the_batch_ends() -> None:
    broker = _Broker(expired={"e2"})
    async with Outstanding(broker, {"e1": "t1", "e2": "t2", "e3": "t3"}, every=0.02) as held:
        held.done("e3")  # nacked: not kept
        await asyncio.sleep(0.11)
        assert held.held == {"e1": "t1"}  # e2's delivery ended: dropped
    count = len(broker.resets)
    await asyncio.sleep(0.05)
    assert len(broker.resets) == count  # nothing after the batch
    assert broker.resets.count(("e1", "t1")) >= 3
    assert broker.resets.count(("e2", "t2")) == 1 and ("e3", "t3") not in broker.resets


async def test_zero_keeps_nothing() -> None:
    broker = _Broker(expired=set())
    async with Outstanding(broker, {"e1": "t1"}, every=0):
        await asyncio.sleep(0.03)
    assert broker.resets == []


async def test_an_ack_batch_is_sent_again_after_unavailable_only() -> None:
    broker = _Broker(expired=set(), ack_failures=1)
    acked = await ack(broker, [broker_pb2.AckRequest(eval_id="e1", token="t1")], pause=0.001)
    assert broker.acks == 2 and acked == ["e1"]
    broker = _Broker(expired=set(), ack_failures=5)
    with pytest.raises(grpc.RpcError):
        await ack(broker, [broker_pb2.AckRequest(eval_id="e1", token="t1")], pause=0.001)
    assert broker.acks == 3


async def test_an_ack_answered_outcome_unknown_is_sent_again_alone() -> None:
    """docs/worker-protocol.md: send the same ack again after OUTCOME_UNKNOWN
    (a landed one then answers NOT_OUTSTANDING and the like); the others of
    the batch are not sent twice, and tries are bounded."""
    acks = [broker_pb2.AckRequest(eval_id=e, token="t") for e in ("e1", "e2", "e3")]
    broker = _Broker(expired=set(), unknown={"e2": 1})
    assert await ack(broker, acks, pause=0.001) == ["e1", "e3", "e2"]
    assert broker.sent == [["e1", "e2", "e3"], ["e2"]]
    broker = _Broker(expired=set(), unknown={"e2": 99})
    assert await ack(broker, acks, pause=0.001) == ["e1", "e3"]
    assert broker.sent == [["e1", "e2", "e3"], ["e2"], ["e2"]]

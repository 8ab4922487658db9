"""Ack settlement: how a worker's outcome leaves the broker, exactly once.

An Ack writes the worker's outcome (and its follow-ups) through the fenced
writer *before* the core forgets the evaluation, so nothing lives only in
memory. The write then comes back twice: as the writer's answer and as an
update on the event stream, in either order. Whichever arrives first while
the ack is still in flight settles it in the core (``core.settle_ack``); the other
finds nothing left to do. :class:`AckSettlement` holds the acks in flight
(eval id -> token) and is that one place.

Pure: no asyncio, no I/O; the ack calls (:mod:`drover.broker.ack_calls`) and the
runtime's feed sink (:mod:`drover.broker.runtime`) call it from their one event loop.
Leader only (the core refuses a standby's settlement).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.core.broker import EvalBroker
from drover.broker.core.effects import Effect
from drover.broker.errors import BrokerDisabled, NotOutstanding, UnknownEvaluation
from drover.errors import InvalidArgument

__all__ = ["ACK_STATUSES", "AckLike", "AckSettlement", "ack_body", "final_status"]

_S = EvaluationStatus
#: The status a worker may report, and the status its evaluation is stored with.
ACK_STATUSES = {
    _S.EVALUATION_STATUS_UNSPECIFIED: _S.EVALUATION_STATUS_COMPLETE,
    _S.EVALUATION_STATUS_COMPLETE: _S.EVALUATION_STATUS_COMPLETE,
    _S.EVALUATION_STATUS_FAILED: _S.EVALUATION_STATUS_FAILED,
    _S.EVALUATION_STATUS_BLOCKED: _S.EVALUATION_STATUS_BLOCKED,
    _S.EVALUATION_STATUS_CANCELED: _S.EVALUATION_STATUS_CANCELED,
}

_ACKED = frozenset(ACK_STATUSES.values())


class AckLike(Protocol):
    """One worker outcome, as the runtime reads it: an Ack's or an AckBatch's
    ``AckRequest`` message as it came (no copy per ack)."""

    @property
    def eval_id(self) -> str: ...

    @property
    def token(self) -> str: ...

    @property
    def status(self) -> Any: ...

    @property
    def status_description(self) -> str: ...

    @property
    def follow_ups(self) -> Sequence[Evaluation]: ...


def final_status(status: int) -> int:
    """The stored status of an ack reporting ``status``; INVALID_ARGUMENT if
    a worker may not report it."""
    final = ACK_STATUSES.get(status)  # type: ignore[call-overload]
    if final is None:
        raise InvalidArgument(
            f"status must be COMPLETE, FAILED, BLOCKED or CANCELED, got "
            f"{_S.Name(status)}", metadata={"field": "status"})  # type: ignore[arg-type]
    return int(final)


def ack_body(held: Evaluation, final: int, description: str) -> Evaluation:
    """The update an ack writes: what was handed out, with the outcome (a
    copy: the core's evaluation is not touched before the write stands)."""
    body = Evaluation()
    body.CopyFrom(held)
    body.status = final  # type: ignore[assignment]
    body.status_description = description
    return body


class AckSettlement:
    """The acks whose write is in flight, each settled in the core once."""

    def __init__(self, core: EvalBroker) -> None:
        self._core = core
        self._inflight: dict[str, str] = {}  # eval id -> token

    def begin(self, eval_id: str, token: str) -> None:
        """An ack's write is about to leave."""
        self._inflight[eval_id] = token

    def written(self, eval_id: str, token: str) -> bool:
        """The write answered (or failed): whether this ack is still
        unsettled (the stream did not bring the write back first)."""
        return self._inflight.pop(eval_id, None) == token

    def on_applied(self, evaluation: Evaluation) -> list[Effect]:
        """An update from the stream: settles the ack it may be the echo of."""
        if self._inflight and evaluation.status in _ACKED:
            token = self._inflight.pop(evaluation.id, None)
            if token is not None:
                return self.settle(evaluation.id, token)
        return []

    def settle(self, eval_id: str, token: str) -> list[Effect]:
        try:
            return self._core.settle_ack(eval_id, token)
        except (UnknownEvaluation, NotOutstanding, BrokerDisabled):
            # Its nack timer fired, or leadership ended, meanwhile: the
            # write stands either way and the stream settles the rest.
            return []

"""Ack settlement (drover.broker.core.settlement): the write's answer and its
echo on the stream may come in either order; the ack is settled in the core
exactly once."""

from __future__ import annotations

import pytest
from broker_builders import make_broker, make_eval

from drover.api.types.v1.evaluation_pb2 import EvaluationStatus
from drover.broker.core.settlement import AckSettlement, ack_body, final_status
from drover.broker.errors import NotOutstanding, UnknownEvaluation
from drover.errors import InvalidArgument

_S = EvaluationStatus


def _delivered(eval_id: str):  # type: ignore[no-untyped-def]
    broker, _ = make_broker()
    broker.enqueue(make_eval(eval_id))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    return broker, delivery


def _echo(delivery, status: int = _S.EVALUATION_STATUS_COMPLETE):  # type: ignore[no-untyped-def]
    return ack_body(delivery.evaluation, status, "done")


def test_the_echo_first_settles_and_the_answer_finds_nothing_left() -> None:
    broker, d = _delivered("e1")
    acks = AckSettlement(broker)
    acks.begin("e1", d.token)
    acks.on_applied(_echo(d))
    with pytest.raises((UnknownEvaluation, NotOutstanding)):
        broker.check_outstanding("e1", d.token)  # settled by the echo
    assert acks.written("e1", d.token) is False  # the answer: nothing to do


def test_the_answer_first_settles_and_the_echo_is_ignored() -> None:
    broker, d = _delivered("e2")
    acks = AckSettlement(broker)
    acks.begin("e2", d.token)
    assert acks.written("e2", d.token) is True
    acks.settle("e2", d.token)
    with pytest.raises((UnknownEvaluation, NotOutstanding)):
        broker.check_outstanding("e2", d.token)
    assert acks.on_applied(_echo(d)) == []  # not in flight any more
    assert acks.settle("e2", d.token) == []  # a late settle is harmless


def test_an_update_that_is_no_outcome_settles_nothing() -> None:
    broker, d = _delivered("e3")
    acks = AckSettlement(broker)
    acks.begin("e3", d.token)
    acks.on_applied(_echo(d, _S.EVALUATION_STATUS_PENDING))
    assert broker.check_outstanding("e3", d.token).id == "e3"  # still outstanding
    assert acks.written("e3", d.token) is True


def test_a_worker_may_report_only_outcomes() -> None:
    assert final_status(_S.EVALUATION_STATUS_UNSPECIFIED) == _S.EVALUATION_STATUS_COMPLETE
    assert final_status(_S.EVALUATION_STATUS_BLOCKED) == _S.EVALUATION_STATUS_BLOCKED
    with pytest.raises(InvalidArgument) as err:
        final_status(_S.EVALUATION_STATUS_PENDING)
    assert err.value.metadata == {"field": "status"}

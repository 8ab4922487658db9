"""Deliveries (drover.broker.core.delivery): Dequeue, Ack, Nack, nack timeouts
and the delivery limit, through the broker core."""

from __future__ import annotations

import collections

import pytest
from broker_builders import PENDING, make_broker, make_eval

from drover.broker.config import BrokerConfig
from drover.broker.core.broker import EvalBroker
from drover.broker.core.effects import CreateFollowUp, MarkFailed
from drover.broker.core.record import EvalState
from drover.broker.errors import (
    BrokerDisabled,
    NotFailed,
    NotOutstanding,
    TokenExpired,
    TokenMismatch,
    UnknownEvaluation,
)
from drover.errors import FailedPrecondition, NotFound

NO_JITTER = BrokerConfig(nack_delay_jitter=0.0)


def test_enqueue_dequeue_ack_roundtrip() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("e1"))
    assert broker.stats().total_ready == 1
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    assert delivery.evaluation.id == "e1"
    assert delivery.deliveries == 1
    assert len(delivery.token) == 36
    stats = broker.stats()
    assert (stats.total_ready, stats.total_unacked) == (0, 1)
    assert stats.by_scheduler["service"].unacked == 1
    assert broker.settle_ack("e1", delivery.token) == []
    stats = broker.stats()
    assert (stats.total_ready, stats.total_unacked) == (0, 0)
    assert broker.get("e1") is None


def test_enqueue_same_id_is_a_noop() -> None:
    broker, _ = make_broker()
    evaluation = make_eval("e1")
    broker.enqueue(evaluation)
    broker.enqueue(evaluation)
    assert broker.stats().total_ready == 1
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    broker.enqueue(evaluation)
    assert broker.stats().total_ready == 0
    assert broker.dequeue(["service"]) is None


def test_dequeue_only_requested_schedulers() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("e1", scheduler="batch"))
    assert broker.dequeue(["service"]) is None
    delivery = broker.dequeue(["service", "batch"])
    assert delivery is not None and delivery.evaluation.id == "e1"


def test_priority_then_fifo() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("low", priority=10))
    broker.enqueue(make_eval("old", priority=50))
    broker.enqueue(make_eval("new", priority=50))
    broker.enqueue(make_eval("high", priority=90))
    order = []
    while (delivery := broker.dequeue(["service"])) is not None:
        order.append(delivery.evaluation.id)
    assert order == ["high", "old", "new", "low"]


def test_priority_across_schedulers() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("svc", scheduler="service", priority=20))
    broker.enqueue(make_eval("bat", scheduler="batch", priority=80))
    delivery = broker.dequeue(["service", "batch"])
    assert delivery is not None and delivery.evaluation.id == "bat"


def test_fairness_random_among_equal_heads() -> None:
    broker, _ = make_broker(seed=3)
    for i in range(200):
        broker.enqueue(make_eval(f"s{i}", scheduler="service"))
        broker.enqueue(make_eval(f"b{i}", scheduler="batch"))
    picked: collections.Counter[str] = collections.Counter()
    for _ in range(200):
        delivery = broker.dequeue(["service", "batch"])
        assert delivery is not None
        picked[delivery.evaluation.type] += 1
    # Older-first across types would give 200 / 0 after the first few picks.
    assert 70 <= picked["service"] <= 130
    assert picked["service"] + picked["batch"] == 200


def test_fairness_is_deterministic_for_a_seed() -> None:
    def run() -> list[str]:
        broker, _ = make_broker(seed=11)
        for i in range(20):
            broker.enqueue(make_eval(f"s{i}", scheduler="service", create_index=1000 + 2 * i))
            broker.enqueue(make_eval(f"b{i}", scheduler="batch", create_index=1001 + 2 * i))
        out = []
        while (delivery := broker.dequeue(["service", "batch"])) is not None:
            out.append(delivery.evaluation.id)
        return out

    assert run() == run()


def test_wait_index_is_highest_modify_index_of_job() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j", create_index=10, modify_index=10))
    broker.enqueue(make_eval("b", job="j", create_index=20, modify_index=25))
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.evaluation.id == "a"
    assert delivery.wait_index == 25


def test_ready_wait_and_processing_timings() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("e1"))
    clock.advance(2.0)
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    clock.advance(5.0)
    broker.outstanding_reset("e1", delivery.token)
    clock.advance(1.0)
    broker.settle_ack("e1", delivery.token)
    stats = broker.stats()
    assert stats.ready_wait.count == 1 and stats.ready_wait.max == pytest.approx(2.0)
    assert stats.processing.p50 == pytest.approx(6.0)


def test_ack_and_nack_bad_inputs() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("e1"))
    with pytest.raises(UnknownEvaluation) as unknown:
        broker.settle_ack("nope", "t")
    assert isinstance(unknown.value, NotFound) and unknown.value.reason == "UNKNOWN_EVALUATION"
    with pytest.raises(NotOutstanding) as not_out:
        broker.settle_ack("e1", "t")
    assert not_out.value.reason == "NOT_OUTSTANDING"
    assert isinstance(not_out.value, FailedPrecondition)
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    with pytest.raises(TokenMismatch) as mismatch:
        broker.take_back("e1", "not-the-token")
    assert mismatch.value.reason == "TOKEN_MISMATCH"
    with pytest.raises(TokenMismatch):
        broker.outstanding_reset("e1", "not-the-token")
    with pytest.raises(UnknownEvaluation):
        broker.outstanding_reset("nope", delivery.token)
    broker.settle_ack("e1", delivery.token)
    with pytest.raises(UnknownEvaluation):
        broker.settle_ack("e1", delivery.token)


def test_nack_redelivers_after_initial_then_subsequent_delay() -> None:
    broker, clock = make_broker(NO_JITTER)
    broker.enqueue(make_eval("e1"))
    first = broker.dequeue(["service"])
    assert first is not None
    broker.take_back("e1", first.token)
    assert broker.stats().total_waiting == 1
    assert broker.dequeue(["service"]) is None
    assert broker.next_deadline() == pytest.approx(clock.now + 1.0)
    clock.advance(0.9)
    broker.tick()
    assert broker.dequeue(["service"]) is None
    clock.advance(0.1)
    broker.tick()
    second = broker.dequeue(["service"])
    assert second is not None and second.deliveries == 2
    broker.take_back("e1", second.token)
    assert broker.next_deadline() == pytest.approx(clock.now + 20.0)
    clock.advance(19.0)
    broker.tick()
    assert broker.dequeue(["service"]) is None
    clock.advance(1.0)
    broker.tick()
    third = broker.dequeue(["service"])
    assert third is not None and third.deliveries == 3


def test_nack_delay_jitter_stays_within_bounds() -> None:
    config = BrokerConfig(nack_delay_jitter=0.5)
    broker, clock = make_broker(config)
    broker.enqueue(make_eval("e1"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    broker.take_back("e1", delivery.token)
    deadline = broker.next_deadline()
    assert deadline is not None
    assert clock.now + 1.0 <= deadline < clock.now + 1.5


def test_nack_timeout_takes_back_and_expires_token() -> None:
    broker, clock = make_broker(NO_JITTER)
    broker.enqueue(make_eval("e1"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    assert broker.next_deadline() == pytest.approx(clock.now + 60.0)
    clock.advance(60.0)
    assert broker.tick() == []
    assert broker.get("e1").state is EvalState.WAITING  # type: ignore[union-attr]
    with pytest.raises(TokenExpired) as expired:
        broker.settle_ack("e1", delivery.token)
    assert expired.value.reason == "TOKEN_EXPIRED"
    assert isinstance(expired.value, NotOutstanding)
    clock.advance(1.0)
    broker.tick()
    again = broker.dequeue(["service"])
    assert again is not None and again.token != delivery.token
    with pytest.raises(TokenExpired):
        broker.settle_ack("e1", delivery.token)
    broker.settle_ack("e1", again.token)


def test_outstanding_reset_extends_nack_timeout() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("e1"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    clock.advance(50.0)
    broker.outstanding_reset("e1", delivery.token)
    clock.advance(50.0)
    broker.tick()
    assert broker.stats().total_unacked == 1
    clock.advance(10.0)
    broker.tick()
    assert broker.stats().total_unacked == 0
    with pytest.raises(TokenExpired):
        broker.outstanding_reset("e1", delivery.token)


def test_delivery_limit_fails_with_follow_up() -> None:
    broker, clock = make_broker(NO_JITTER)
    broker.enqueue(make_eval("e1", job="j", priority=70))
    broker.enqueue(make_eval("e2", job="j"))
    effects = []
    for attempt in range(3):
        clock.advance(100.0)
        broker.tick()
        delivery = broker.dequeue(["service"])
        assert delivery is not None and delivery.evaluation.id == "e1"
        assert delivery.deliveries == attempt + 1
        effects = broker.take_back("e1", delivery.token)
    failed, follow_up = effects
    assert isinstance(failed, MarkFailed) and isinstance(follow_up, CreateFollowUp)
    assert failed.eval_id == "e1" and "reached delivery limit (3)" in failed.description
    assert failed.next_eval == follow_up.evaluation.id
    new = follow_up.evaluation
    assert (new.job_id, new.priority, new.previous_eval) == ("j", 70, "e1")
    assert new.status == PENDING and new.triggered_by == "failed-follow-up"
    delay = new.wait_until.ToNanoseconds() / 1e9 - clock.wall()
    assert 60.0 <= delay <= 360.0
    stats = broker.stats()
    assert (stats.total_failed, stats.total_failed_held, stats.total_pending) == (1, 1, 1)
    # The failed evaluation keeps the job's slot until its failure is written.
    assert broker.dequeue(["service"]) is None
    with pytest.raises(NotFailed):
        broker.release_failed("e2")
    broker.release_failed("e1")
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.evaluation.id == "e2"


def test_nack_timeout_at_limit_fails_too() -> None:
    broker, clock = make_broker(BrokerConfig(delivery_limit=1))
    broker.enqueue(make_eval("e1"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    clock.advance(60.0)
    effects = broker.tick()
    assert [type(e) for e in effects] == [MarkFailed, CreateFollowUp]
    with pytest.raises(TokenExpired):
        broker.take_back("e1", delivery.token)


def test_ack_at_delivery_limit_succeeds() -> None:
    broker, clock = make_broker(NO_JITTER)
    broker.enqueue(make_eval("e1"))
    for _ in range(2):
        delivery = broker.dequeue(["service"])
        assert delivery is not None
        broker.take_back("e1", delivery.token)
        clock.advance(100.0)
        broker.tick()
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.deliveries == 3
    assert broker.settle_ack("e1", delivery.token) == []
    stats = broker.stats()
    assert (stats.total_failed, stats.total_unacked, stats.total_ready) == (0, 0, 0)


def _loaded(seed: int) -> EvalBroker:
    broker, _ = make_broker(seed=seed)
    for i in range(12):
        # Two evaluations per job (the second waits pending), mixed priorities.
        broker.enqueue(make_eval(f"a{i}", job=f"j{i % 6}", priority=40 + 10 * (i % 3),
                                   create_index=i + 1))
    return broker


def test_dequeue_many_delivers_what_one_by_one_would() -> None:
    one_by_one = _loaded(seed=3)
    singles = []
    while (d := one_by_one.dequeue(["service"])) is not None:
        singles.append(d)
    many = _loaded(seed=3).dequeue_many(["service"], 100)
    assert many == singles
    assert len(many) == 6  # one per job: the pending ones wait for an ack
    priorities = [d.evaluation.priority for d in many]
    assert priorities == sorted(priorities, reverse=True)
    assert len({d.token for d in many}) == 6
    capped = _loaded(seed=3)
    assert capped.dequeue_many(["service"], 2) == singles[:2]
    assert capped.stats().total_unacked == 2


def test_dequeue_many_refuses_a_standby_and_delivers_nothing_paused() -> None:
    broker = _loaded(seed=1)
    broker.set_paused(True)
    assert broker.dequeue_many(["service"], 10) == []
    broker.standby()
    with pytest.raises(BrokerDisabled):
        broker.dequeue_many(["service"], 10)

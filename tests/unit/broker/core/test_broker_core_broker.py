"""The broker state machine (drover.broker.core.broker): modes (enable, disable,
hot standby and its promotion), the mode gate on worker calls, pausing and
operator cancels."""

from __future__ import annotations

import pytest
from broker_builders import CANCELED, PENDING, dequeue_id, make_broker, make_eval

from drover.api.types.v1.evaluation_pb2 import EvaluationStatus
from drover.broker.core.broker import BrokerMode
from drover.broker.core.effects import CancelSuperseded, MarkCanceled
from drover.broker.errors import BrokerDisabled, EvaluationInFlight, UnknownEvaluation
from drover.errors import FailedPrecondition, Unavailable


def test_disable_drops_everything_including_delays() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("ready"))
    broker.enqueue(make_eval("delayed", wait_until=clock.wall() + 10))
    broker.enqueue(make_eval("nacked"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    broker.take_back(delivery.evaluation.id, delivery.token)
    assert broker.next_deadline() is not None
    broker.disable()
    assert broker.mode is BrokerMode.DISABLED
    assert broker.next_deadline() is None
    assert broker.enqueue(make_eval("ignored")) == []
    assert broker.tick() == []
    broker.enable()
    clock.advance(100.0)
    broker.tick()
    stats = broker.stats()
    assert (stats.total_ready, stats.total_waiting, stats.total_unacked) == (0, 0, 0)
    assert broker.dequeue(["service"]) is None
    with pytest.raises(UnknownEvaluation):
        broker.settle_ack(delivery.evaluation.id, delivery.token)


def test_restore_requires_a_mode() -> None:
    broker, _ = make_broker(enable=False)
    with pytest.raises(BrokerDisabled):
        broker.restore([make_eval("e")])


def test_standby_tracks_without_delivering_or_effects() -> None:
    broker, clock = make_broker(enable=False)
    broker.standby()
    broker.apply(make_eval("a", job="j", create_index=1))
    broker.apply(make_eval("b", job="j", create_index=2))
    assert broker.apply(make_eval("c", job="j", create_index=3)) == []
    broker.apply(make_eval("d", job="k", create_index=4, wait_until=clock.wall() + 5))
    stats = broker.stats()
    assert (stats.mode, stats.total_ready, stats.total_pending, stats.total_waiting) == (
        "standby",
        1,
        1,
        1,
    )
    assert broker.ready_schedulers() == frozenset()
    clock.advance(5.0)
    assert broker.tick() == []
    # The leader's cancel of d's sibling arrives; a deferred cancel of b stays.
    broker.apply(make_eval("b", job="j", status=PENDING, create_index=2))
    assert broker.get("b") is None
    effects = broker.enable()
    assert CancelSuperseded("default", "j", ("b",), "c") in effects
    # Promotion collapses the READY slot a and pending c: nobody works on a.
    assert CancelSuperseded("default", "j", ("a",), "c") in effects
    ids = {broker.dequeue(["service"]).evaluation.id for _ in range(2)}  # type: ignore[union-attr]
    assert ids == {"c", "d"}


def test_standby_drops_deferred_cancel_written_by_leader() -> None:
    broker, _ = make_broker(enable=False)
    broker.standby()
    broker.apply(make_eval("a", job="j", create_index=1))
    broker.apply(make_eval("b", job="j", create_index=2))
    broker.apply(make_eval("c", job="j", create_index=3))
    broker.apply(make_eval("b", job="j", status=CANCELED, create_index=2))
    broker.apply(make_eval("a", job="j", status=EvaluationStatus.EVALUATION_STATUS_COMPLETE))
    assert broker.enable() == []
    assert broker.dequeue(["service"]).evaluation.id == "c"  # type: ignore[union-attr]


def test_old_leaders_unacked_is_deliverable_on_promotion() -> None:
    # The old leader had "a" unacked: the store still says pending.
    broker, _ = make_broker(enable=False)
    broker.standby()
    broker.restore([make_eval("a", job="j", create_index=1)])
    broker.enable()
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.evaluation.id == "a"


def test_leader_to_standby_returns_slots_to_ready() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    evaluation = make_eval("a", job="j", create_index=delivery.evaluation.create_index)
    broker.enqueue_all([(evaluation, delivery.token)])
    broker.standby()
    stats = broker.stats()
    assert (stats.total_ready, stats.total_unacked, stats.total_pending) == (1, 0, 1)
    broker.enable()
    with pytest.raises(UnknownEvaluation):
        broker.settle_ack("missing", delivery.token)
    again = broker.dequeue(["service"])
    assert again is not None and again.evaluation.id == "b"


def test_worker_calls_refused_unless_leader() -> None:
    broker, _ = make_broker(enable=False)
    with pytest.raises(BrokerDisabled) as disabled:
        broker.dequeue(["service"])
    assert isinstance(disabled.value, Unavailable) and disabled.value.reason == "BROKER_DISABLED"
    broker.standby()
    for call in (
        lambda: broker.dequeue(["service"]),
        lambda: broker.settle_ack("e", "t"),
        lambda: broker.take_back("e", "t"),
        lambda: broker.outstanding_reset("e", "t"),
        lambda: broker.cancel("e"),
    ):
        with pytest.raises(BrokerDisabled):
            call()


def test_pause_stops_deliveries_but_keeps_queues() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("e1"))
    broker.enqueue(make_eval("e2"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    broker.set_paused(True)
    assert broker.dequeue(["service"]) is None
    assert broker.ready_schedulers() == frozenset()
    broker.settle_ack("e1", delivery.token)
    assert broker.stats().total_ready == 1 and broker.stats().paused
    broker.set_paused(False)
    assert broker.ready_schedulers() == frozenset({"service"})
    again = broker.dequeue(["service"])
    assert again is not None and again.evaluation.id == "e2"


def test_cancel_evaluation() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    broker.enqueue(make_eval("c", job="k"))
    eval_id, _token = dequeue_id(broker)
    in_flight, queued = ("a", "c") if eval_id == "a" else ("c", "a")
    with pytest.raises(EvaluationInFlight) as busy:
        broker.cancel(in_flight)
    assert isinstance(busy.value, FailedPrecondition)
    assert busy.value.reason == "EVALUATION_IN_FLIGHT"
    assert "being processed by a worker" in busy.value.message
    with pytest.raises(UnknownEvaluation):
        broker.cancel("missing")
    assert broker.cancel(queued, "backlog") == [
        MarkCanceled("default", queued, "canceled by an operator: backlog")
    ]
    assert broker.cancel("b") == [MarkCanceled("default", "b", "canceled by an operator")]
    assert broker.stats().total_cancelled == 2
    assert broker.get("b") is None and broker.get(queued) is None


def test_cancel_ready_slot_promotes_pending() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    broker.cancel("a")
    assert dequeue_id(broker)[0] == "b"

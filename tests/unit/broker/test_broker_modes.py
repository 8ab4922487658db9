"""Enable/disable, hot standby promotion, restore, listing and stats."""

from __future__ import annotations

from typing import cast

import pytest
from broker_builders import BLOCKED, CANCELED, PENDING, make_broker, make_eval

from drover.api.types.v1.evaluation_pb2 import EvaluationStatus
from drover.broker.core.broker import BrokerMode
from drover.broker.core.effects import CancelSuperseded
from drover.broker.core.record import EvalState
from drover.broker.errors import BrokerDisabled, UnknownEvaluation


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


def test_restore_places_ready_delayed_blocked_and_collapses_jobs() -> None:
    broker, clock = make_broker()
    evals = [
        make_eval("j-old", job="j", create_index=1),
        make_eval("j-new", job="j", create_index=3),
        make_eval("j-mid", job="j", create_index=2, modify_index=50),
        make_eval("k", job="k", create_index=4),
        make_eval("later", job="l", create_index=5, wait_until=clock.wall() + 10),
        make_eval("b1", job="m", status=BLOCKED, create_index=6),
        make_eval("b2", job="m", status=BLOCKED, create_index=7),
        make_eval("done", job="n", status=CANCELED, create_index=8),
        make_eval("k", job="k", create_index=4),
    ]
    effects = cast(list[CancelSuperseded], broker.restore(evals))  # what a restore gives here
    assert sorted(effects, key=lambda e: e.job_id) == [
        CancelSuperseded("default", "j", ("j-old", "j-mid"), "j-new"),
        CancelSuperseded("default", "m", ("b1",), "b2"),
    ]
    stats = broker.stats()
    assert (stats.total_ready, stats.total_waiting, stats.total_blocked) == (2, 1, 1)
    assert stats.total_cancelled == 3
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.evaluation.id == "j-new"
    assert delivery.wait_index == 50
    clock.advance(10.0)
    broker.tick()
    assert {broker.dequeue(["service"]).evaluation.id for _ in range(2)} == {"k", "later"}  # type: ignore[union-attr]


def test_restore_of_100k_evaluations() -> None:
    broker, _ = make_broker()
    evals = [
        make_eval(f"e{i}", job=f"job-{i % 50_000}", priority=50 + i % 3, create_index=i + 1)
        for i in range(100_000)
    ]
    effects = cast(list[CancelSuperseded], broker.restore(evals))  # what a restore gives here
    stats = broker.stats()
    assert stats.total_ready == 50_000
    assert stats.total_cancelled == 50_000
    assert sum(len(e.eval_ids) for e in effects) == 50_000
    first = broker.dequeue(["service"])
    assert first is not None and first.evaluation.priority == 52
    # The restored broker keeps working incrementally.
    broker.settle_ack(first.evaluation.id, first.token)
    broker.enqueue(make_eval("fresh", job="fresh-job", priority=99))
    assert broker.dequeue(["service"]).evaluation.id == "fresh"  # type: ignore[union-attr]


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


def test_iter_queue_in_create_order_with_cursor() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("c", job="j", create_index=30))
    broker.enqueue(make_eval("a", job="j", create_index=10))
    broker.enqueue(make_eval("b", job="k", create_index=20, status=BLOCKED))
    broker.enqueue(make_eval("d", job="l", create_index=40, wait_until=clock.wall() + 9))
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.evaluation.id == "c"
    rows = [(row.create_index, row.id, row.state) for row in broker.iter_queue()]
    assert rows == [
        (10, "a", EvalState.PENDING),
        (20, "b", EvalState.BLOCKED),
        (30, "c", EvalState.UNACKED),
        (40, "d", EvalState.WAITING),
    ]
    assert [row.id for row in broker.iter_queue((20, "b"))] == ["c", "d"]
    assert [row.id for row in broker.iter_queue((30, "c"), descending=True)] == ["b", "a"]
    broker.settle_ack("c", delivery.token)
    rows2 = [(row.id, row.state, row.record.deliveries) for row in broker.iter_queue()]
    assert rows2 == [
        ("a", EvalState.READY, 0),
        ("b", EvalState.BLOCKED, 0),
        ("d", EvalState.WAITING, 0),
    ]


def test_iter_queue_after_restore_and_readd() -> None:
    broker, _ = make_broker()
    broker.restore([make_eval("x", create_index=5), make_eval("y", create_index=3)])
    broker.enqueue(make_eval("z", create_index=4))
    broker.cancel("z")
    broker.enqueue(make_eval("z", create_index=4))
    assert [row.id for row in broker.iter_queue()] == ["y", "z", "x"]


def test_stats_by_scheduler() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("s1", scheduler="service"))
    broker.enqueue(make_eval("s2", scheduler="service"))
    broker.enqueue(make_eval("b1", scheduler="batch"))
    assert broker.dequeue(["batch"]) is not None
    stats = broker.stats()
    assert stats.by_scheduler["service"].ready == 2
    assert (stats.by_scheduler["batch"].ready, stats.by_scheduler["batch"].unacked) == (0, 1)
    assert stats.mode == "leader" and not stats.paused

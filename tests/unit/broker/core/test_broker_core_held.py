"""The held evaluations (drover.broker.core.held): per-job serialization,
supersede, blocked and unblocking, wait_until, through the broker core."""

from __future__ import annotations

import pytest
from broker_builders import BLOCKED, dequeue_id, make_broker, make_eval

from drover.broker.core.effects import CancelSuperseded
from drover.broker.core.record import EvalState


def test_one_evaluation_per_job_in_flight() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    broker.enqueue(make_eval("other", job="k"))
    stats = broker.stats()
    assert (stats.total_ready, stats.total_pending) == (2, 1)
    first = dequeue_id(broker)
    second = dequeue_id(broker)
    assert {first[0], second[0]} == {"a", "other"}
    assert dequeue_id(broker) is None
    broker.settle_ack("a", dict([first, second])["a"])
    assert broker.get("b").state is EvalState.READY  # type: ignore[union-attr]
    assert dequeue_id(broker)[0] == "b"


def test_pending_slot_is_released_by_nack_only_after_redelivery() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    eval_id, token = dequeue_id(broker)
    broker.take_back(eval_id, token)
    clock.advance(5.0)
    broker.tick()
    # The nacked evaluation still holds the job's slot: it comes back, not b.
    assert dequeue_id(broker)[0] == "a"
    assert broker.get("b").state is EvalState.PENDING  # type: ignore[union-attr]


def test_newer_pending_supersedes_older_at_once() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    assert broker.enqueue(make_eval("b", job="j")) == []
    effects = broker.enqueue(make_eval("c", job="j"))
    assert effects == [CancelSuperseded("default", "j", ("b",), "c")]
    assert isinstance(effects[0], CancelSuperseded)  # so the line above said: for the types
    assert effects[0].description == "superseded by evaluation c"
    assert broker.get("b") is None
    stats = broker.stats()
    assert (stats.total_pending, stats.total_cancelled) == (1, 1)


def test_higher_priority_pending_is_kept_over_newer_lower() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("urgent", job="j", priority=90))
    effects = broker.enqueue(make_eval("late", job="j", priority=40, modify_index=10_000))
    assert effects == [CancelSuperseded("default", "j", ("late",), "urgent")]
    eval_id, token = dequeue_id(broker)
    broker.settle_ack(eval_id, token)
    delivery = broker.dequeue(["service"])
    assert delivery is not None and delivery.evaluation.id == "urgent"
    # The kept evaluation covers the cancelled one's index.
    assert delivery.wait_index == 10_000


def test_pending_order_priority_then_newest() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("p50-old", job="j", priority=50, create_index=500))
    effects = broker.enqueue(make_eval("p50-older", job="j", priority=50, create_index=400))
    assert effects == [CancelSuperseded("default", "j", ("p50-older",), "p50-old")]
    effects = broker.enqueue(make_eval("p60", job="j", priority=60, create_index=300))
    assert effects == [CancelSuperseded("default", "j", ("p50-old",), "p60")]


def test_same_job_id_in_two_namespaces_is_independent() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j", namespace="one"))
    broker.enqueue(make_eval("b", job="j", namespace="two"))
    broker.enqueue(make_eval("c", job="j", namespace="one"))
    effects = broker.enqueue(make_eval("d", job="j", namespace="one"))
    assert effects == [CancelSuperseded("one", "j", ("c",), "d")]
    got = {dequeue_id(broker)[0], dequeue_id(broker)[0]}
    assert got == {"a", "b"}
    assert dequeue_id(broker) is None


def test_wait_until_delays_and_does_not_hold_the_slot() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("later", job="j", wait_until=clock.wall() + 30.0))
    broker.enqueue(make_eval("now", job="j"))
    assert broker.stats().total_waiting == 1
    eval_id, token = dequeue_id(broker)
    assert eval_id == "now"
    assert broker.next_deadline() == pytest.approx(clock.now + 30.0)
    clock.advance(30.0)
    broker.tick()
    # Due, but its job is in flight: it waits as pending.
    assert broker.get("later").state is EvalState.PENDING  # type: ignore[union-attr]
    broker.settle_ack(eval_id, token)
    assert dequeue_id(broker)[0] == "later"


def test_wait_until_in_the_past_is_ready_at_once() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("e", wait_until=clock.wall() - 5.0))
    assert broker.stats().total_ready == 1


def test_blocked_one_per_job_newer_replaces_and_cancels() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("b1", job="j", status=BLOCKED))
    effects = broker.enqueue(make_eval("b2", job="j", status=BLOCKED))
    assert effects == [CancelSuperseded("default", "j", ("b1",), "b2")]
    effects = broker.enqueue(make_eval("b0", job="j", status=BLOCKED, create_index=1))
    assert effects == [CancelSuperseded("default", "j", ("b0",), "b2")]
    assert broker.stats().total_blocked == 1
    assert broker.dequeue(["service"]) is None


def test_an_unblocked_loser_is_cancelled() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("blocked", job="j", status=BLOCKED, create_index=1))
    broker.enqueue(make_eval("pend", job="j"))
    # the state service stored it pending (capacity changed); the feed brings it
    effects = broker.apply(make_eval("blocked", job="j", create_index=1, modify_index=9))
    assert effects == [CancelSuperseded("default", "j", ("blocked",), "pend")]


def test_one_blocked_per_job_the_newest_by_snapshot_index_wins() -> None:
    """Nomad's latestEvalIndex: max(create_index, snapshot_index)."""
    broker, _ = make_broker()
    newer_snapshot = make_eval("s", job="j", status=BLOCKED, create_index=5)
    newer_snapshot.snapshot_index = 50
    broker.enqueue(newer_snapshot)
    effects = broker.enqueue(make_eval("c", job="j", status=BLOCKED, create_index=10))
    assert effects == [CancelSuperseded("default", "j", ("c",), "s")]
    assert broker.stats().total_blocked == 1

"""Per-job serialization, supersede, blocked, wait_until, requeue and cancel."""

from __future__ import annotations

import pytest
from broker_builders import BLOCKED, COMPLETE, PENDING, make_broker, make_eval

from drover.broker.core.effects import CancelSuperseded, MarkCanceled, MarkPending
from drover.broker.core.record import EvalState
from drover.broker.errors import EvaluationInFlight, UnknownEvaluation
from drover.errors import FailedPrecondition


def _dequeue_id(broker, schedulers=("service",)):  # type: ignore[no-untyped-def]
    delivery = broker.dequeue(list(schedulers))
    return None if delivery is None else (delivery.evaluation.id, delivery.token)


def test_one_evaluation_per_job_in_flight() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    broker.enqueue(make_eval("other", job="k"))
    stats = broker.stats()
    assert (stats.total_ready, stats.total_pending) == (2, 1)
    first = _dequeue_id(broker)
    second = _dequeue_id(broker)
    assert {first[0], second[0]} == {"a", "other"}
    assert _dequeue_id(broker) is None
    broker.settle_ack("a", dict([first, second])["a"])
    assert broker.get("b").state is EvalState.READY  # type: ignore[union-attr]
    assert _dequeue_id(broker)[0] == "b"


def test_pending_slot_is_released_by_nack_only_after_redelivery() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    eval_id, token = _dequeue_id(broker)
    broker.take_back(eval_id, token)
    clock.advance(5.0)
    broker.tick()
    # The nacked evaluation still holds the job's slot: it comes back, not b.
    assert _dequeue_id(broker)[0] == "a"
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
    eval_id, token = _dequeue_id(broker)
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
    got = {_dequeue_id(broker)[0], _dequeue_id(broker)[0]}
    assert got == {"a", "b"}
    assert _dequeue_id(broker) is None


def test_wait_until_delays_and_does_not_hold_the_slot() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("later", job="j", wait_until=clock.wall() + 30.0))
    broker.enqueue(make_eval("now", job="j"))
    assert broker.stats().total_waiting == 1
    eval_id, token = _dequeue_id(broker)
    assert eval_id == "now"
    assert broker.next_deadline() == pytest.approx(clock.now + 30.0)
    clock.advance(30.0)
    broker.tick()
    # Due, but its job is in flight: it waits as pending.
    assert broker.get("later").state is EvalState.PENDING  # type: ignore[union-attr]
    broker.settle_ack(eval_id, token)
    assert _dequeue_id(broker)[0] == "later"


def test_wait_until_in_the_past_is_ready_at_once() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("e", wait_until=clock.wall() - 5.0))
    assert broker.stats().total_ready == 1


def test_requeue_with_token_is_enqueued_on_ack() -> None:
    broker, _ = make_broker()
    evaluation = make_eval("e1", job="j")
    broker.enqueue(evaluation)
    eval_id, token = _dequeue_id(broker)
    reblocked = make_eval("e1", job="j", status=BLOCKED, create_index=evaluation.create_index)
    assert broker.enqueue_all([(reblocked, token)]) == []
    stats = broker.stats()
    assert (stats.total_ready, stats.total_unacked, stats.total_blocked) == (0, 1, 0)
    broker.settle_ack(eval_id, token)
    assert broker.get("e1").state is EvalState.BLOCKED  # type: ignore[union-attr]


def test_requeue_pending_with_token_is_redelivered_after_ack() -> None:
    broker, _ = make_broker()
    evaluation = make_eval("e1")
    broker.enqueue(evaluation)
    eval_id, token = _dequeue_id(broker)
    broker.enqueue_all([(evaluation, token)])
    broker.settle_ack(eval_id, token)
    again = broker.dequeue(["service"])
    assert again is not None and again.evaluation.id == "e1" and again.deliveries == 1


def test_requeue_with_token_is_dropped_on_nack() -> None:
    broker, clock = make_broker()
    evaluation = make_eval("e1")
    broker.enqueue(evaluation)
    eval_id, token = _dequeue_id(broker)
    broker.enqueue_all([(evaluation, token)])
    broker.take_back(eval_id, token)
    clock.advance(5.0)
    broker.tick()
    stats = broker.stats()
    assert (stats.total_ready, stats.total_unacked) == (1, 0)
    again = broker.dequeue(["service"])
    assert again is not None and again.deliveries == 2
    broker.settle_ack("e1", again.token)
    assert broker.dequeue(["service"]) is None


def test_requeue_with_wrong_token_is_ignored() -> None:
    broker, _ = make_broker()
    evaluation = make_eval("e1")
    broker.enqueue(evaluation)
    eval_id, token = _dequeue_id(broker)
    broker.enqueue_all([(evaluation, "someone-else")])
    broker.settle_ack(eval_id, token)
    assert broker.dequeue(["service"]) is None


def test_blocked_one_per_job_newer_replaces_and_cancels() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("b1", job="j", status=BLOCKED))
    effects = broker.enqueue(make_eval("b2", job="j", status=BLOCKED))
    assert effects == [CancelSuperseded("default", "j", ("b1",), "b2")]
    effects = broker.enqueue(make_eval("b0", job="j", status=BLOCKED, create_index=1))
    assert effects == [CancelSuperseded("default", "j", ("b0",), "b2")]
    assert broker.stats().total_blocked == 1
    assert broker.dequeue(["service"]) is None


def test_unblock_all_and_unblock_job() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("b1", job="j", status=BLOCKED))
    broker.enqueue(make_eval("b2", job="k", status=BLOCKED))
    assert broker.unblock_job("default", "nope") == []
    effects = broker.unblock_job("default", "j", "job scaled")
    assert effects == [MarkPending("default", "b1", "unblocked: job scaled")]
    assert _dequeue_id(broker)[0] == "b1"
    effects = broker.unblock_all()
    assert effects == [MarkPending("default", "b2", "unblocked: capacity changed")]
    stats = broker.stats()
    assert (stats.total_blocked, stats.total_ready) == (0, 1)


def test_unblocked_loser_is_cancelled_not_marked_pending() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("blocked", job="j", status=BLOCKED, create_index=1))
    broker.enqueue(make_eval("pend", job="j"))
    effects = broker.unblock_all()
    assert effects == [CancelSuperseded("default", "j", ("blocked",), "pend")]


def test_completed_evaluation_untracks_older_blocked() -> None:
    broker, _ = make_broker()
    broker.apply(make_eval("b", job="j", status=BLOCKED, create_index=10))
    done = make_eval("e", job="j", status=COMPLETE, create_index=5, modify_index=20)
    assert broker.apply(done) == []  # untracked, as Nomad does: nothing written
    assert broker.get("b") is None and broker.stats().total_blocked == 0
    broker.apply(make_eval("b2", job="j", status=BLOCKED, create_index=30))
    same_txn = make_eval("e2", job="j", status=COMPLETE, create_index=25, modify_index=30)
    assert broker.apply(same_txn) == []
    assert broker.stats().total_blocked == 1


def test_stream_blocked_to_pending_unblocks_without_effect() -> None:
    broker, _ = make_broker()
    broker.apply(make_eval("b", job="j", status=BLOCKED, create_index=10))
    assert broker.apply(make_eval("b", job="j", status=PENDING, create_index=10)) == []
    assert broker.get("b").state is EvalState.READY  # type: ignore[union-attr]


def test_stream_terminal_status_forgets() -> None:
    broker, _ = make_broker()
    broker.apply(make_eval("a", job="j", create_index=1))
    broker.apply(make_eval("b", job="j", create_index=2))
    broker.apply(make_eval("a", job="j", status=COMPLETE, create_index=1))
    assert broker.get("a") is None
    assert broker.get("b").state is EvalState.READY  # type: ignore[union-attr]
    broker.forget("b")
    assert broker.stats().total_ready == 0


def test_cancel_evaluation() -> None:
    broker, _ = make_broker()
    broker.enqueue(make_eval("a", job="j"))
    broker.enqueue(make_eval("b", job="j"))
    broker.enqueue(make_eval("c", job="k"))
    eval_id, _token = _dequeue_id(broker)
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
    assert _dequeue_id(broker)[0] == "b"

"""Feeding the broker core (drover.broker.core.intake): worker requeues and
event-stream updates."""

from __future__ import annotations

from broker_builders import BLOCKED, COMPLETE, PENDING, dequeue_id, make_broker, make_eval

from drover.broker.core.record import EvalState


def test_requeue_with_token_is_enqueued_on_ack() -> None:
    broker, _ = make_broker()
    evaluation = make_eval("e1", job="j")
    broker.enqueue(evaluation)
    eval_id, token = dequeue_id(broker)
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
    eval_id, token = dequeue_id(broker)
    broker.enqueue_all([(evaluation, token)])
    broker.settle_ack(eval_id, token)
    again = broker.dequeue(["service"])
    assert again is not None and again.evaluation.id == "e1" and again.deliveries == 1


def test_requeue_with_token_is_dropped_on_nack() -> None:
    broker, clock = make_broker()
    evaluation = make_eval("e1")
    broker.enqueue(evaluation)
    eval_id, token = dequeue_id(broker)
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
    eval_id, token = dequeue_id(broker)
    broker.enqueue_all([(evaluation, "someone-else")])
    broker.settle_ack(eval_id, token)
    assert broker.dequeue(["service"]) is None


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


def test_a_completed_evaluation_keeps_the_blocked_one_it_created() -> None:
    # The worker's plan writes the blocked evaluation, then its ack completes
    # the evaluation: not placed, so the job's next blocked one supersedes it
    # (cancelled) rather than leaving it stored blocked and untracked.
    broker, _ = make_broker()
    blocked = make_eval("b", job="j", status=BLOCKED, create_index=10)
    blocked.previous_eval = "e"
    broker.apply(blocked)
    assert broker.apply(make_eval("e", job="j", status=COMPLETE, create_index=5,
                                  modify_index=20)) == []
    assert broker.stats().total_blocked == 1
    effects = broker.apply(make_eval("b2", job="j", status=BLOCKED, create_index=30))
    assert effects and broker.get("b") is None and broker.get("b2") is not None


def test_an_ack_with_a_blocked_follow_up_untracks_nothing() -> None:
    # The ack writes the evaluation complete (blocked_eval named) and its
    # blocked follow-up in one txn, the complete one read first: the job's
    # older blocked evaluation stays tracked, and the follow-up cancels it.
    broker, _ = make_broker()
    broker.apply(make_eval("b1", job="j", status=BLOCKED, create_index=10))
    done = make_eval("e2", job="j", status=COMPLETE, create_index=15, modify_index=30)
    done.blocked_eval = "b2"
    assert broker.apply(done) == []
    assert broker.stats().total_blocked == 1
    assert broker.apply(make_eval("b2", job="j", status=BLOCKED, create_index=30))
    assert broker.get("b1") is None and broker.get("b2") is not None


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

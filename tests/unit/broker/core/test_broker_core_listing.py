"""The held evaluations in create-index order (drover.broker.core.listing)."""

from __future__ import annotations

from broker_builders import BLOCKED, make_broker, make_eval

from drover.broker.core.record import EvalState


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


def test_listing_survives_churn() -> None:
    broker, _ = make_broker()
    for i in range(2500):
        broker.enqueue(make_eval(f"e{i}", create_index=i + 1))
        if i % 5:
            broker.forget(f"e{i}")
    rows = [row.create_index for row in broker.iter_queue()]
    assert rows == [i + 1 for i in range(2500) if i % 5 == 0]

"""The broker core's bulk load from the store (drover.broker.core.restore)."""

from __future__ import annotations

from typing import cast

from broker_builders import BLOCKED, CANCELED, make_broker, make_eval

from drover.broker.core.effects import CancelSuperseded


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

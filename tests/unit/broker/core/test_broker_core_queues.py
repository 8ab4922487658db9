"""The ready queues and the timer heap (drover.broker.core.queues): lazy
deletion and compaction."""

from __future__ import annotations

import pytest
from broker_builders import make_broker, make_eval

from drover.broker.core.record import EvalState


def test_ready_heap_compaction_keeps_order_and_counts() -> None:
    broker, _ = make_broker()
    for i in range(3000):
        broker.enqueue(make_eval(f"e{i}", priority=i % 7, create_index=10_000 + i))
    kept = {f"e{i}" for i in range(3000) if i % 10 == 0}
    for i in range(3000):
        if f"e{i}" not in kept:
            broker.cancel(f"e{i}")
    assert broker.stats().total_ready == len(kept)
    assert broker.stats().by_scheduler["service"].ready == len(kept)
    got = []
    while (delivery := broker.dequeue(["service"])) is not None:
        got.append(delivery.evaluation)
    assert {e.id for e in got} == kept
    keys = [(-e.priority, e.create_index) for e in got]
    assert keys == sorted(keys)


def test_many_outstanding_resets_keep_one_live_timer() -> None:
    broker, clock = make_broker()
    broker.enqueue(make_eval("e1"))
    delivery = broker.dequeue(["service"])
    assert delivery is not None
    for _ in range(5000):
        clock.advance(1.0)
        broker.outstanding_reset("e1", delivery.token)
        broker.tick()
    assert broker.next_deadline() == pytest.approx(clock.now + 60.0)
    assert broker.stats().total_unacked == 1
    clock.advance(60.0)
    broker.tick()
    assert broker.get("e1").state is EvalState.WAITING  # type: ignore[union-attr]

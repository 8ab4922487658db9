"""Lazy deletion, compaction and reservoir statistics of the broker core."""

from __future__ import annotations

import random

import pytest
from broker_builders import make_broker, make_eval

from drover.broker.core.record import EvalState
from drover.broker.core.stats import Reservoir


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


def test_listing_survives_churn() -> None:
    broker, _ = make_broker()
    for i in range(2500):
        broker.enqueue(make_eval(f"e{i}", create_index=i + 1))
        if i % 5:
            broker.forget(f"e{i}")
    rows = [row.create_index for row in broker.iter_queue()]
    assert rows == [i + 1 for i in range(2500) if i % 5 == 0]


def test_reservoir_quantiles_and_bound() -> None:
    reservoir = Reservoir(100, random.Random(1))
    assert reservoir.summary().count == 0
    for value in range(1, 10_001):
        reservoir.add(float(value))
    summary = reservoir.summary()
    assert summary.count == 10_000
    assert summary.max == 10_000.0
    assert 3000 <= summary.p50 <= 7000
    assert summary.p99 >= summary.p50
    small = Reservoir(100, random.Random(1))
    for sample in (3.0, 1.0, 2.0):
        small.add(sample)
    assert (small.summary().p50, small.summary().p99) == (2.0, 3.0)


def test_reservoir_keeps_a_uniform_sample() -> None:
    rng = random.Random(5)
    deciles = [0] * 10
    for _ in range(200):
        reservoir = Reservoir(50, rng)
        for value in range(5000):
            reservoir.add(float(value))
        kept = reservoir._samples
        assert len(kept) == 50 and len(set(kept)) == 50
        for sample in kept:
            deciles[int(sample) // 500] += 1
    # 10,000 kept in all: each tenth of the stream holds ~1,000 of them.
    assert all(850 <= n <= 1150 for n in deciles), deciles

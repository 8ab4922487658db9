"""The broker's counters and timing reservoirs (drover.broker.core.stats)."""

from __future__ import annotations

import random

from broker_builders import make_broker, make_eval

from drover.broker.core.stats import Reservoir


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

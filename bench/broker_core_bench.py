"""Micro benchmark of the eval broker's pure core.

Prints enqueue, dequeue and ack operations per second (distinct jobs, so
every evaluation is ready) and the time to restore N pending evaluations
(building the protos is not timed). Usage:

    .venv/bin/python bench/broker_core_bench.py [--ops 200000] [--restore 1000000]
"""

from __future__ import annotations

import argparse
import gc
import random
import time

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.config import BrokerConfig
from drover.broker.core.broker import EvalBroker
from drover.broker.core.delivery import Delivery

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
SCHEDULERS = ("service", "batch", "system")


def make_evals(n: int, jobs: int) -> list[Evaluation]:
    rng = random.Random(1)
    return [
        Evaluation(
            id=f"eval-{i:09d}",
            namespace="default",
            priority=rng.choice((30, 50, 70)),
            type=SCHEDULERS[i % 3],
            job_id=f"job-{i % jobs}",
            status=PENDING,
            create_index=i + 1,
            modify_index=i + 1,
        )
        for i in range(n)
    ]


def new_broker() -> EvalBroker:
    broker = EvalBroker(BrokerConfig(), clock=time.monotonic, rng=random.Random(2),
                        wall_clock=time.time)
    broker.enable()
    return broker


def timed(label: str, n: int, fn) -> None:  # type: ignore[no-untyped-def]
    gc.collect()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    print(f"{label:<28} {n:>9} ops  {elapsed:7.3f} s  {n / elapsed:>12,.0f} ops/s")


def bench_ops(n: int) -> None:
    evals = make_evals(n, jobs=n)
    broker = new_broker()
    deliveries: list[Delivery] = []
    timed("enqueue", n, lambda: [broker.enqueue(e) for e in evals])

    def dequeue_all() -> None:
        for _ in range(n):
            delivery = broker.dequeue(SCHEDULERS)
            assert delivery is not None
            deliveries.append(delivery)

    timed("dequeue (3 types)", n, dequeue_all)
    timed("ack", n, lambda: [broker.settle_ack(d.evaluation.id, d.token) for d in deliveries])


def bench_restore(n: int) -> None:
    for jobs, label in ((n, "distinct jobs"), (max(1, n // 100), "100 evals/job")):
        evals = make_evals(n, jobs=jobs)
        broker = new_broker()
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        effects = broker.restore(evals)
        elapsed = time.perf_counter() - start
        gc.enable()
        stats = broker.stats()
        print(
            f"restore {n:,} ({label}): {elapsed:.3f} s  "
            f"ready={stats.total_ready:,} cancelled={stats.total_cancelled:,} "
            f"effects={len(effects):,}"
        )
        del evals, broker, effects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=200_000)
    parser.add_argument("--restore", type=int, default=1_000_000)
    args = parser.parse_args()
    bench_ops(args.ops)
    bench_restore(args.restore)


if __name__ == "__main__":
    main()

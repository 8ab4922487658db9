"""Builders for the broker core's unit tests: a virtual clock and evaluations."""

from __future__ import annotations

import itertools
import random

from virtual_clock import VirtualClock

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.config import BrokerConfig
from drover.broker.core.broker import EvalBroker

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
BLOCKED = EvaluationStatus.EVALUATION_STATUS_BLOCKED
COMPLETE = EvaluationStatus.EVALUATION_STATUS_COMPLETE
CANCELED = EvaluationStatus.EVALUATION_STATUS_CANCELED
WALL0 = 1_700_000_000.0

_indexes = itertools.count(1)


def make_broker(
    config: BrokerConfig | None = None, *, seed: int = 7, enable: bool = True
) -> tuple[EvalBroker, VirtualClock]:
    clock = VirtualClock(100.0)
    broker = EvalBroker(config or BrokerConfig(), clock=clock, rng=random.Random(seed),
                        wall_clock=clock.wall)
    if enable:
        broker.enable()
    return broker, clock


def make_eval(
    eval_id: str,
    *,
    job: str | None = None,
    namespace: str = "default",
    priority: int = 50,
    scheduler: str = "service",
    status: int = PENDING,
    create_index: int | None = None,
    modify_index: int | None = None,
    wait_until: float | None = None,
) -> Evaluation:
    """An evaluation; ``create_index`` defaults to a fresh, increasing index."""
    index = next(_indexes) if create_index is None else create_index
    evaluation = Evaluation(
        id=eval_id,
        namespace=namespace,
        priority=priority,
        type=scheduler,
        job_id=job if job is not None else f"job-{eval_id}",
        status=status,  # type: ignore[arg-type]
        create_index=index,
        modify_index=index if modify_index is None else modify_index,
    )
    if wait_until is not None:
        evaluation.wait_until.FromNanoseconds(int(wait_until * 1e9))
    return evaluation


def dequeue_id(broker, schedulers=("service",)):  # type: ignore[no-untyped-def]
    """The next delivery's (evaluation id, token), or None."""
    delivery = broker.dequeue(list(schedulers))
    return None if delivery is None else (delivery.evaluation.id, delivery.token)

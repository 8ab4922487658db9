"""EvalBatcher: coalescing per deployment, batching across deployments."""

from __future__ import annotations

import pytest
from deployments_builders import T0

from drover.deployments.config import BatcherConfig
from drover.deployments.core.batcher import BatcherStats, EvalBatcher
from drover.deployments.core.effects import CreateEvaluation


def request(deployment_id: str) -> CreateEvaluation:
    return CreateEvaluation(
        namespace="default",
        job_id=f"job-{deployment_id}",
        deployment_id=deployment_id,
        priority=50,
        type="service",
        job_modify_index=7,
    )


def test_requests_for_one_deployment_coalesce() -> None:
    b = EvalBatcher(BatcherConfig())
    first = request("d1")
    assert b.add(first, T0) is True
    assert b.add(request("d1"), T0 + 0.1) is False
    assert b.add(request("d1"), T0 + 0.2) is False
    assert b.flush_due(T0 + 0.25) == (first,)
    assert b.stats() == BatcherStats(pending=0, added=1, coalesced=2, flushed=1, batches=1)


def test_deployments_share_one_batch_after_the_window() -> None:
    b = EvalBatcher(BatcherConfig(window=0.25))
    reqs = [request(f"d{i}") for i in range(5)]
    for i, r in enumerate(reqs):
        b.add(r, T0 + i * 0.01)
    assert b.next_due() == pytest.approx(T0 + 0.25)
    assert b.flush_due(T0 + 0.249) == ()
    assert b.flush_due(T0 + 0.25) == tuple(reqs)
    assert b.next_due() is None
    assert b.flush_due(T0 + 10) == ()


def test_a_new_window_opens_after_a_flush() -> None:
    b = EvalBatcher(BatcherConfig())
    b.add(request("d1"), T0)
    b.flush_due(T0 + 1)
    r = request("d1")
    assert b.add(r, T0 + 5) is True  # not coalesced into the flushed one
    assert b.next_due() == pytest.approx(T0 + 5.25)
    assert b.flush_due(T0 + 5.25) == (r,)


def test_batches_are_bounded_and_the_rest_is_due_at_once() -> None:
    b = EvalBatcher(BatcherConfig(window=0.25, max_batch=2))
    reqs = [request(f"d{i}") for i in range(5)]
    for r in reqs:
        b.add(r, T0)
    assert b.flush_due(T0 + 0.25) == tuple(reqs[:2])
    assert b.next_due() == pytest.approx(T0 + 0.25)
    assert b.flush_due(T0 + 0.26) == tuple(reqs[2:4])
    assert b.flush_due(T0 + 0.26) == tuple(reqs[4:])
    assert b.stats().batches == 3


def test_discard_drops_a_pending_request() -> None:
    b = EvalBatcher(BatcherConfig())
    b.add(request("d1"), T0)
    assert b.discard("d1") is True
    assert b.discard("d1") is False
    assert b.next_due() is None


@pytest.mark.parametrize(("window", "max_batch"), [(-0.1, 10), (0.25, 0)])
def test_bad_config_is_refused(window: float, max_batch: int) -> None:
    with pytest.raises(ValueError):
        BatcherConfig(window=window, max_batch=max_batch)

"""The initial list reads pages ahead while it decodes: a list in many small
pages builds exactly the tables one big page does (real etcd)."""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.state.cache import Cache
from drover.state.config import CacheConfig
from drover.state.core import codec


async def test_a_list_in_small_pages_builds_the_same_tables(replica: Any) -> None:
    evs = [evaluation_pb2.Evaluation(
        id=f"ev-{i:03}", namespace=("default", "b")[i % 2], job_id=f"j{i % 7}", type="service",
        status=evaluation_pb2.EVALUATION_STATUS_PENDING, priority=50,
        deployment_id="d1" if i % 10 == 0 else "") for i in range(90)]
    for i in range(0, len(evs), 30):
        await replica.stub.UpsertEvaluations(
            state_pb2.UpsertEvaluationsRequest(evaluations=evs[i:i + 30]))
    keys = replica.service.cache.keys
    big = Cache(replica.store, keys, CacheConfig(page_size=5000))
    small = Cache(replica.store, keys, CacheConfig(page_size=7))
    for c in (big, small):
        await c.start()
        await c.close()
    for kind in codec.MESSAGES:
        assert dict(small.tables[kind].objects) == dict(big.tables[kind].objects), kind
    evals = small.tables[codec.EVALUATIONS]
    assert len(evals) == 90
    assert len(evals.candidates("deployment_id", "")) == 81
    assert len(evals.candidates("deployment_id", "d1")) == 9
    assert small.tables.marker_revision == big.tables.marker_revision > 0
    assert small.revision == big.revision

"""Decode once, through the shell: the state service's writes tell its cache
what they put, so the cache applies its own writes without parsing them
back -- and ends exactly as a fresh list of the store would build it."""

from __future__ import annotations

from typing import Any

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.coord.kv import prefix_end
from drover.state.app import StateService
from drover.state.core import codec
from drover.state.core.tables import Table, Tables


class _NoMetadata:
    def invocation_metadata(self) -> tuple[()]:
        return ()


@pytest.mark.parametrize("applied_by", ["writer", "watch"])
async def test_own_writes_are_applied_without_a_parse_and_as_a_list_builds_them(
        service: StateService, monkeypatch: pytest.MonkeyPatch, applied_by: str) -> None:
    """Whoever applies the txn: the writer (apply_committed), or the watch,
    which on a loaded replica usually delivers it before its answer."""
    if applied_by == "watch":
        monkeypatch.setattr(type(service.cache), "apply_committed",
                            lambda self, revision, ops: False)
    parses: list[bytes] = []
    entry = Table._entry

    def counted(self: Table, value: bytes, mod: int, key: Any) -> Any:
        parses.append(value)
        return entry(self, value, mod, key)
    monkeypatch.setattr(Table, "_entry", counted)

    evs = [evaluation_pb2.Evaluation(id=f"e{i}", namespace="default", job_id=f"j{i % 3}",
                                     type="service", priority=50 + i,
                                     status=evaluation_pb2.EVALUATION_STATUS_PENDING)
           for i in range(20)]
    await service.servicer.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=evs), _NoMetadata())
    await service.cache.sync()
    assert service.cache.own_writes["writer"] == (1 if applied_by == "writer" else 0)
    assert parses == []
    assert not service.cache.tables._expected  # every expectation used

    # The cache equals what a fresh list of the store builds (records, keys,
    # revisions, index buckets).
    store = service.cache.store
    page = await store.range(service.cache.keys.base.encode(),
                             prefix_end(service.cache.keys.base.encode()), limit=10_000)
    listed = Tables(service.cache.keys)
    listed.stage(page.kvs)
    listed.load_staged()
    mine, fresh = service.cache.tables[codec.EVALUATIONS], listed[codec.EVALUATIONS]
    assert dict(mine.objects) == dict(fresh.objects)
    for job in ("j0", "j1", "j2"):
        assert (list(mine.candidates("job_id", job).iterate(None, False))
                == list(fresh.candidates("job_id", job).iterate(None, False)))

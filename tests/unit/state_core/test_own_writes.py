"""Who applied this replica's own committed txns to its cache (the
``drover.state.cache.own_writes`` counter): the writer at once, the watch
before the answer came, or the watch after the write waited for it."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.coord.kv import Put
from drover.state.app import StateService
from drover.state.cache import marker_put
from drover.state.core import codec


class _NoMetadata:
    def invocation_metadata(self) -> tuple[()]:
        return ()


def _ev(i: int) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=f"e{i}", namespace="default", type="service",
                                     status=evaluation_pb2.EVALUATION_STATUS_PENDING)


async def test_each_committed_txn_is_counted_once_by_who_applied_it(
        service: StateService) -> None:
    cache = service.cache
    assert cache.own_writes == {"writer": 0, "watch": 0, "waited": 0}
    # The cache is exactly one revision behind its own txn: the writer applies it.
    await cache.sync()
    await service.servicer.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=[_ev(1)]), _NoMetadata())
    assert cache.own_writes == {"writer": 1, "watch": 0, "waited": 0}

    key = cache.keys.key(codec.EVALUATIONS, "default", "e2")
    ops = [Put(key, codec.encode(_ev(2))), marker_put(cache.keys)]
    # Another replica's write the cache has not seen yet: behind, so this
    # replica's next txn waits for the watch.
    other = await cache.store.txn([], ops)
    mine = await cache.store.txn([], ops)
    assert cache.revision < other.revision
    assert not cache.apply_committed(mine.revision, ops)
    assert cache.own_writes["waited"] == 1
    await cache.wait_for_revision(mine.revision)
    # Its answer after the watch applied it: the watch's.
    assert not cache.apply_committed(mine.revision, ops)
    assert cache.own_writes == {"writer": 1, "watch": 1, "waited": 1}
    assert cache.tables[codec.EVALUATIONS].objects["default/e2"][1] == mine.revision

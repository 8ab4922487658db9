"""DeleteEvaluations by filter compares one revision marker, not every key,
and falls back to per-key compares, then a re-match, when anything changed:
a stale match never deletes an evaluation changed since (real etcd, two
replicas; one replica's cache is held back so its match is stale)."""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, scheduler_pb2

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
FLT = 'triggered_by == "sweep"'


def _ev(i: int, trigger: str = "sweep") -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=f"ev-{i}", namespace="default", job_id=f"j{i}",
                                     status=PENDING, type="service", triggered_by=trigger,
                                     priority=50)


class Held:
    """Hold back a replica's cache: watch batches are kept, not applied,
    until :meth:`release` (which the held replica's next sync calls)."""

    def __init__(self, replica: Any) -> None:
        self.cache = replica.service.cache
        self.apply, self.sync = self.cache._apply, self.cache.sync
        self.kept: list[Any] = []
        self.syncs = 0
        self.cache._apply = self.kept.append
        self.cache.sync = self._sync

    def release(self) -> None:
        self.cache._apply = self.apply
        for batch in self.kept:
            self.apply(batch)
        self.kept.clear()

    async def _sync(self) -> int:
        self.syncs += 1
        self.release()
        return int(await self.sync())


async def _fence(replica: Any) -> tuple[tuple[str, str]]:
    """A leader's fence (rewriting an existing evaluation is leader work)."""
    from drover.coord.kv import Put
    key = f"{replica.service.cache.keys.base}election/broker/test-marker"
    res = await replica.store.txn([], [Put(key.encode(), b"me")])
    return (("drover-fence", f"{key}@{res.revision}"),)


def _record_compares(replica: Any) -> list[int]:
    """The number of compares of each txn the replica's writer commits."""
    writer, seen = replica.service.writer, []
    commit = writer.commit

    async def recording(compares: Any, ops: Any, fence: Any = None, **kw: Any) -> int:
        seen.append(len(compares))
        return int(await commit(compares, ops, fence, **kw))

    writer.commit = recording
    return seen


async def _setup(replica: Any, n: int) -> str:
    """Seed ``n`` matching evaluations, pause, delete ev-0 and ev-1 by the
    first call of a walk in pages of two (the one call that syncs); the
    token of the walk."""
    await replica.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[_ev(i) for i in range(n)]))
    await replica.stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=True)))
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=2))
    assert r.deleted == 2 and r.next_page_token
    return str(r.next_page_token)


async def _left(replica: Any) -> set[str]:
    r = await replica.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(namespace="*"))
    return {e.id for e in r.evaluations}


async def test_an_evaluation_changed_after_a_stale_match_is_not_deleted(replica: Any,
                                                                        replica2: Any) -> None:
    token = await _setup(replica, 5)  # the next page: ev-2, ev-3
    held = Held(replica)
    compares = _record_compares(replica)
    # Through the other replica: ev-3 no longer matches; the held cache still
    # thinks it does.
    await replica2.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[_ev(3, trigger="kept")]), metadata=await _fence(replica2))
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=2, page_token=token))
    # Marker compare (paused + marker), per-key compares (paused + 2), then
    # a re-match after a sync (paused + the one that still matches).
    assert compares == [2, 3, 2]
    assert held.syncs == 1 and r.deleted == 1
    assert await _left(replica2) == {"ev-3", "ev-4"}


async def test_an_unrelated_write_costs_one_per_key_retry_not_a_rematch(
        replica: Any, replica2: Any) -> None:
    token = await _setup(replica, 4)  # the next page: ev-2, ev-3
    held = Held(replica)
    compares = _record_compares(replica)
    await replica2.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[_ev(99, trigger="other")]))
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=2, page_token=token))
    assert compares == [2, 3] and held.syncs == 0 and r.deleted == 2
    held.release()
    assert await _left(replica2) == {"ev-99"}


async def test_with_nothing_changed_one_marker_compare_deletes_the_page(replica: Any) -> None:
    token = await _setup(replica, 4)
    compares = _record_compares(replica)
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=2, page_token=token))
    assert compares == [2] and r.deleted == 2
    assert await _left(replica) == set()

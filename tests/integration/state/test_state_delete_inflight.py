"""DeleteEvaluations by filter with several txns of one call in flight (real
etcd, real grpc.aio servers): a write landing mid-call to a matched
evaluation keeps it, un-pausing the broker mid-call stops the rest of the
call, ``deleted`` is what etcd lost, and a page only partly applied resumes
where it stopped.

Each test holds the call's txns at its writer: the first txn commits, then a
concurrent change lands (through a second replica), then the others go on,
all of them already in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, scheduler_pb2
from drover.rpc.remote import error_info
from drover.state.core import codec

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
FLT = 'triggered_by == "sweep"'


def _ev(i: int, trigger: str = "sweep", priority: int = 50) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=f"ev-{i:04d}", namespace="default", job_id=f"j{i}",
                                     status=PENDING, type="service", triggered_by=trigger,
                                     priority=priority)


async def _seed(replica: Any, n: int) -> None:
    for lo in range(0, n, 100):
        await replica.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_ev(i) for i in range(lo, min(n, lo + 100))]))
    await _pause(replica, True)


async def _pause(replica: Any, paused: bool) -> None:
    await replica.stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=paused)))


async def _fence(replica: Any) -> tuple[tuple[str, str]]:
    """A leader's fence (rewriting an existing evaluation is leader work)."""
    from drover.coord.kv import Put
    key = f"{replica.service.cache.keys.base}election/broker/test-inflight"
    res = await replica.store.txn([], [Put(key.encode(), b"me")])
    return (("drover-fence", f"{key}@{res.revision}"),)


async def _in_etcd(replica: Any) -> set[str]:
    """Evaluation ids etcd holds (read from etcd, not from a cache)."""
    keys = replica.service.cache.keys
    start = keys.key(codec.EVALUATIONS, "default", "")
    page = await replica.store.range(start, start[:-1] + bytes([start[-1] + 1]))
    return {kv.key.decode().rsplit("/", 1)[1] for kv in page.kvs}


class Gate:
    """Wraps a replica's writer: the call's first txn commits, then
    ``between()`` runs, then the txns waiting meanwhile go on. Records each
    txn's keys and how many were in flight at once."""

    def __init__(self, replica: Any, between: Callable[[], Awaitable[None]]) -> None:
        self.writer = replica.service.writer
        self.commit = self.writer.commit
        self.between = between
        self.first_done = asyncio.Event()
        self.txns: list[int] = []
        self.active = self.most_active = 0
        self.writer.commit = self._commit

    async def _commit(self, compares: Any, ops: Any, fence: Any = None, **kw: Any) -> int:
        first = not self.txns
        self.txns.append(len(ops))
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            if first:
                try:
                    return int(await self.commit(compares, ops, fence, **kw))
                finally:
                    await self.between()
                    self.first_done.set()
            await self.first_done.wait()
            return int(await self.commit(compares, ops, fence, **kw))
        finally:
            self.active -= 1


async def test_a_write_mid_call_to_a_matched_evaluation_keeps_it(replica: Any,
                                                                   replica2: Any) -> None:
    await _seed(replica, 250)  # one page: two txns at etcd's default cap
    fence = await _fence(replica2)

    async def change() -> None:
        # ev-0200 (the call's second txn) stops matching; ev-0210 still
        # matches but changed: both were matched before the change.
        await replica2.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_ev(200, trigger="kept"), _ev(210, priority=70)]), metadata=fence)

    gate = Gate(replica, change)
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=1000))
    assert gate.most_active >= 2  # the call's txns were in flight together
    left = await _in_etcd(replica)
    assert left == {"ev-0200"}
    # ev-0210 was re-matched on fresh data, and deleted then.
    assert r.deleted == 249 and not r.next_page_token


async def test_unpausing_the_broker_mid_call_stops_deleting(replica: Any,
                                                             replica2: Any) -> None:
    await _seed(replica, 250)

    async def resume() -> None:
        await _pause(replica2, False)

    gate = Gate(replica, resume)
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=1000))
    first = gate.txns[0]
    assert len(gate.txns) >= 2 and gate.most_active >= 2
    left = await _in_etcd(replica)
    # Only the txn committed before the un-pause applied; `deleted` is it.
    assert r.deleted == first == 250 - len(left)
    assert r.next_page_token  # the rest of the page is still to walk
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            filter=FLT, page_size=1000, page_token=r.next_page_token))
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    detail = error_info(info.value)
    assert detail is not None and detail.reason == "BROKER_NOT_PAUSED"
    # Paused again, the same token deletes exactly what is left.
    await _pause(replica, True)
    r2 = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=1000, page_token=r.next_page_token))
    assert r2.deleted == len(left) and not r2.next_page_token
    assert await _in_etcd(replica) == set()


async def test_a_partly_applied_page_resumes_where_it_stopped(replica: Any,
                                                              replica2: Any) -> None:
    """One txn of the page keeps conflicting (its evaluation is rewritten
    before each try, still matching) and runs out of retries: the call
    returns what the others applied and a token that makes the next call
    re-match the evaluations left, and the walk then ends with none left."""
    await _seed(replica, 400)
    fence = await _fence(replica2)
    writer = replica.service.writer
    commit = writer.commit
    hot = replica.service.cache.keys.key(codec.EVALUATIONS, "default", "ev-0200")
    rewrites = 0

    async def contended(compares: Any, ops: Any, fence_: Any = None, **kw: Any) -> int:
        nonlocal rewrites
        if any(getattr(op, "key", None) == hot for op in ops):
            rewrites += 1
            await replica2.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
                evaluations=[_ev(200, priority=1 + rewrites)]), metadata=fence)
        return int(await commit(compares, ops, fence_, **kw))

    writer.commit = contended
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=300))
    writer.commit = commit
    left = await _in_etcd(replica)
    assert rewrites >= 3 and "ev-0200" in left
    assert r.deleted == 400 - len(left) and r.deleted > 0
    # The txn that failed held ev-0200 and its neighbours (the page is cut
    # in create order); beyond the page nothing was touched.
    assert {f"ev-{i:04d}" for i in range(300, 400)} < left
    assert r.next_page_token
    total, token = r.deleted, r.next_page_token
    while token:
        r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            filter=FLT, page_size=300, page_token=token))
        total, token = total + r.deleted, r.next_page_token
    assert total == 400
    assert await _in_etcd(replica) == set()


async def test_a_call_that_applies_nothing_fails_and_its_token_may_be_resent(
        replica: Any, replica2: Any) -> None:
    await _seed(replica, 200)
    r = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=100))
    assert r.deleted == 100
    await _pause(replica2, False)  # before the call's txns: none may apply
    await replica2.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[_ev(999, trigger="other")]))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            filter=FLT, page_size=100, page_token=r.next_page_token))
    detail = error_info(info.value)
    assert detail is not None and detail.reason == "BROKER_NOT_PAUSED"
    assert len(await _in_etcd(replica)) == 101
    await _pause(replica, True)
    r2 = await replica.stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=FLT, page_size=100, page_token=r.next_page_token))
    assert r2.deleted == 100 and not r2.next_page_token
    assert await _in_etcd(replica) == {"ev-0999"}

"""What every write RPC uses around its plan (:mod:`drover.state.pipeline`).

A write request's cap is the txn size the replica is told.

127 objects at etcd's default ``--max-txn-ops``; ``max_txn_ops - 1`` where
the cluster raises it and the replica is told so (``--state-max-txn-ops``).
A request over the cap is refused INVALID_ARGUMENT before anything is
written, naming the cap in its ErrorInfo (``max_objects``) so a client can
size its next requests; one at the cap lands in one txn. On
:class:`MemoryKV`, which refuses an over-size txn as etcd does.

Decode once, through the shell: the state service's writes tell its cache
what they put, so the cache applies its own writes without parsing them
back -- and ends exactly as a fresh list of the store would build it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from state_harness import StateReplica, start_state_on, state_config_with
from virtual_clock import VirtualClock

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.coord import Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import Put, prefix_end
from drover.coord.memkv import MemoryKV
from drover.rpc.remote import error_info
from drover.state.app import StateService
from drover.state.config import WriterConfig
from drover.state.core import codec
from drover.state.core.tables import Table, Tables

# -- the write cap --------------------------------------------------------------

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
COMPLETE = EvaluationStatus.EVALUATION_STATUS_COMPLETE
OPS = 300  # etcd's --max-txn-ops here, and what the replica is told


@pytest.fixture
async def raised(keyspace: Keyspace, clock: VirtualClock) -> AsyncIterator[StateReplica]:
    r = await start_state_on(MemoryKV(clock, max_txn_ops=OPS), keyspace,
                             config=state_config_with(writer=WriterConfig(max_txn_ops=OPS)))
    try:
        yield r
    finally:
        await r.close()


def _evals(n: int, tag: str) -> list[Evaluation]:
    return [Evaluation(id=f"{tag}-{i}", namespace="default", priority=50, type="service",
                       job_id=f"{tag}-job{i}", status=PENDING) for i in range(n)]


async def _refused(call: object) -> dict[str, str]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    info = error_info(err)
    assert info is not None
    return dict(info.metadata)


async def test_a_raised_cap_takes_max_txn_ops_less_one_in_one_txn(
        raised: StateReplica) -> None:
    stub = raised.stub
    resp = await stub.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=_evals(OPS - 1, "a")))
    listed = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="default", page_size=1000))
    assert len(listed.evaluations) == OPS - 1
    # One txn: every evaluation was created at the call's index.
    assert {e.create_index for e in listed.evaluations} == {resp.index}


async def test_over_the_raised_cap_is_refused_naming_it_and_nothing_is_written(
        raised: StateReplica) -> None:
    meta = await _refused(raised.stub.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=_evals(OPS, "b"))))
    assert meta == {"field": "evaluations", "max_objects": str(OPS - 1)}
    count = await raised.stub.CountEvaluations(
        state_pb2.CountEvaluationsRequest(namespace="default"))
    assert count.count == 0


async def test_the_brokers_updates_take_the_raised_cap_fenced(raised: StateReplica) -> None:
    """UpdateEvaluations (the broker's acks): the fence compare and one
    compare per evaluation fit the raised txn (OPS - 1 + 1 compares)."""
    stub = raised.stub
    leader_key = f"{raised.service.cache.keys.base}election/broker/x"
    term = (await raised.store.txn([], [Put(leader_key.encode(), b"broker-x")])).revision
    fence = Fence(leader_key, term)
    await stub.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=_evals(OPS - 1, "c")))
    listed = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="default", page_size=1000))
    done = []
    for e in listed.evaluations:
        e.status = COMPLETE
        done.append(e)
    resp = await stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(updates=done),
                                        metadata=fence.metadata())
    assert resp.index > term
    meta = await _refused(stub.UpdateEvaluations(
        state_pb2.UpdateEvaluationsRequest(updates=done, creates=_evals(1, "d")),
        metadata=fence.metadata()))
    assert meta["max_objects"] == str(OPS - 1)


async def test_the_default_cap_is_the_apis_floor(replica: StateReplica) -> None:
    meta = await _refused(replica.stub.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=_evals(128, "e"))))
    assert meta == {"field": "evaluations", "max_objects": "127"}
    await replica.stub.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=_evals(127, "e")))


# -- decode once, through the shell ---------------------------------------------

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

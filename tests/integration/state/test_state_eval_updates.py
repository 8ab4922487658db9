"""UpdateEvaluations against real etcd: updates never create, creates never update."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, scheduler_pb2
from drover.rpc.remote import error_info

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
COMPLETE = evaluation_pb2.EVALUATION_STATUS_COMPLETE


def _eval(eval_id: str, status: evaluation_pb2.EvaluationStatus = PENDING,
          ) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=eval_id, namespace="default", job_id=f"job-{eval_id}",
                                     status=status, type="service", priority=50,
                                     triggered_by="job-register")


async def _expect(call, code: grpc.StatusCode, reason: str) -> dict[str, str]:
    with pytest.raises(grpc.RpcError) as err:
        await call
    assert err.value.code() == code, err.value.details()
    info = error_info(err.value)
    assert info is not None and info.reason == reason, info
    return dict(info.metadata)


class _Leader:
    """The replica's stub, with UpdateEvaluations carrying a leader's fence
    (updates are broker outcomes: the state service takes them only fenced)."""

    def __init__(self, stub: Any, fence: tuple[tuple[str, str], ...]) -> None:
        self._stub, self.fence = stub, fence

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    def UpdateEvaluations(self, request: Any, **kw: Any) -> Any:
        kw.setdefault("metadata", self.fence)
        return self._stub.UpdateEvaluations(request, **kw)


async def _leader(replica: Any) -> _Leader:
    from drover.coord.kv import Put
    key = f"{replica.service.cache.keys.base}election/broker/eval-updates-test"
    res = await replica.store.txn([], [Put(key.encode(), b"test leader")])
    return _Leader(replica.stub, (("drover-fence", f"{key}@{res.revision}"),))


async def _get(stub, eval_id: str) -> evaluation_pb2.Evaluation | None:
    try:
        resp = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=eval_id))
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND
        return None
    return resp.evaluation


async def test_update_compares_on_the_index_held_and_never_creates(replica: Any) -> None:
    stub = await _leader(replica)
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[_eval("u1"), _eval("u2")]))
    held = await _get(stub, "u1")
    assert held is not None
    done = evaluation_pb2.Evaluation()
    done.CopyFrom(held)
    done.status = COMPLETE
    resp = await stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        updates=[done], creates=[_eval("u1-next")]))
    now = await _get(stub, "u1")
    assert now is not None and now.status == COMPLETE and now.modify_index == resp.index
    assert now.create_index == held.create_index
    assert (await _get(stub, "u1-next")) is not None

    # The same update again: based on an index that is no longer current.
    meta = await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        updates=[done])), grpc.StatusCode.FAILED_PRECONDITION, "EVALUATION_CHANGED")
    assert meta["eval_id"] == "u1" and meta["status"] == "EVALUATION_STATUS_COMPLETE"

    # Deleted meanwhile: the update is refused and nothing comes back.
    u2 = await _get(stub, "u2")
    assert u2 is not None
    await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=True)))
    await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(ids=["u2"]))
    u2.status = COMPLETE
    meta = await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        updates=[u2], creates=[_eval("u2-next")])), grpc.StatusCode.NOT_FOUND,
        "EVALUATION_GONE")
    assert meta["eval_id"] == "u2"
    assert await _get(stub, "u2") is None
    assert await _get(stub, "u2-next") is None  # all or nothing


async def test_creates_never_overwrite_and_bad_requests_say_why(replica: Any) -> None:
    stub = await _leader(replica)
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[_eval("c1")]))
    meta = await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        creates=[_eval("c1", COMPLETE)])), grpc.StatusCode.ALREADY_EXISTS, "EVALUATION_EXISTS")
    assert meta["eval_id"] == "c1"
    stored = await _get(stub, "c1")
    assert stored is not None and stored.status == PENDING

    await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest()),
                  grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    meta = await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        updates=[_eval("c1")])), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    assert meta["field"] == "updates[0].modify_index"
    meta = await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        creates=[_eval("")])), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    assert meta["field"] == "creates[0].id"
    meta = await _expect(stub.UpdateEvaluations(state_pb2.UpdateEvaluationsRequest(
        updates=[stored], creates=[_eval("c1")])), grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT")
    assert meta["field"] == "creates[0].id"


async def test_update_is_fenced(replica: Any) -> None:
    stub = replica.stub
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[_eval("f1")]))
    held = await _get(stub, "f1")
    assert held is not None
    nobody = f"{replica.service.cache.keys.base}election/broker/nobody"
    await _expect(stub.UpdateEvaluations(
        state_pb2.UpdateEvaluationsRequest(updates=[held]),
        metadata=(("drover-fence", f"{nobody}@12345"),)),
        grpc.StatusCode.FAILED_PRECONDITION, "FENCE_LOST")
    for fence in ((), (("drover-fence", "/drover/not-an-election-key@12345"),)):
        await _expect(stub.UpdateEvaluations(  # an outcome needs a leader's fence
            state_pb2.UpdateEvaluationsRequest(updates=[held]), metadata=fence),
            grpc.StatusCode.FAILED_PRECONDITION, "FENCE_REQUIRED")
    again = await _get(stub, "f1")
    assert again is not None and again.modify_index == held.modify_index

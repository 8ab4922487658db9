"""Count and delete select the same set; a dry run needs no paused broker and
its page tokens drive only dry runs."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, scheduler_pb2
from drover.rpc.remote import error_info


async def _seed(stub: Any, job: str, n: int) -> None:
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
        evaluation_pb2.Evaluation(id=f"{job}-{i}", job_id=job, type="batch",
                                  triggered_by="job-register",
                                  status_description="it's \"quoted\"")
        for i in range(n)]))


async def _pause(stub: Any, paused: bool) -> None:
    await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=paused)))


async def test_count_with_job_id_matches_what_delete_deletes(replica: Any) -> None:
    stub = replica.stub
    await _seed(stub, "a", 5)
    await _seed(stub, "b", 3)
    flt = "status_description == 'it\\'s \"quoted\"'"
    count = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(filter=flt,
                                                                          job_id="a"))
    assert count.count == 5
    await _pause(stub, True)
    resp = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=flt, job_id="a", page_size=100))
    assert resp.deleted == 5 and not resp.next_page_token
    left = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(filter=flt))
    assert left.count == 3


async def test_dry_run_needs_no_pause_and_its_token_is_refused_by_a_real_delete(
    replica: Any,
) -> None:
    stub = replica.stub
    await _seed(stub, "c", 6)
    await _pause(stub, False)
    flt = 'job_id == "c"'
    preview = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=flt, page_size=2, dry_run=True))
    assert preview.deleted == 2 and preview.next_page_token
    # Paging on through the preview works while the broker runs.
    more = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=flt, page_size=2, dry_run=True, page_token=preview.next_page_token))
    assert more.deleted == 2
    await _pause(stub, True)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            filter=flt, page_size=2, page_token=preview.next_page_token))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    detail = error_info(info.value)
    assert detail is not None and detail.reason == "INVALID_PAGE_TOKEN"
    assert detail.metadata["mismatch"] == "dry_run"
    # Nothing was deleted by the refused call, and a real walk deletes all six.
    total, token = 0, ""
    while True:
        resp = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            filter=flt, page_size=2, page_token=token))
        total += resp.deleted
        token = resp.next_page_token
        if not token:
            break
    assert total == 6

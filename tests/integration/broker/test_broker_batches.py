"""Batched delivery: Dequeue with max_evaluations, and AckBatch's per-ack outcomes."""

from __future__ import annotations

import grpc
import pytest
from broker_cluster import Cluster, make_eval
from google.rpc import code_pb2

from drover.api.broker.v1 import broker_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.config import ShellConfig
from drover.rpc.remote import error_info

S = EvaluationStatus


async def take(cluster: Cluster, n: int, poll: float = 2.0) -> list[broker_pb2.Delivery]:
    leader = await cluster.leader()
    req = broker_pb2.DequeueRequest(schedulers=["service"], max_evaluations=n)
    req.timeout.FromMilliseconds(int(poll * 1000))
    got = await leader.stub.Dequeue(req, timeout=poll + 5)
    if not got.token:
        return []
    first = broker_pb2.Delivery(evaluation=got.evaluation, token=got.token,
                                wait_index=got.wait_index)
    return [first, *got.additional]


def ack(d: broker_pb2.Delivery, **kw: object) -> broker_pb2.AckRequest:
    return broker_pb2.AckRequest(eval_id=d.evaluation.id, token=d.token, **kw)  # type: ignore[arg-type]


async def invalid(call: object, field: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    info = error_info(err)
    assert info is not None and info.metadata["field"] == field, info
    return err.details() or ""


async def test_a_batch_takes_what_is_ready_one_per_job(cluster: Cluster) -> None:
    # Serving first: a new leader's restore would cancel a2 as superseded.
    leader = await cluster.leader()
    await cluster.upsert(make_eval("a1", job="a"), make_eval("a2", job="a"),
                         make_eval("b1", job="b"), make_eval("c1", job="c"))
    got = await take(cluster, 10)
    ids = sorted(d.evaluation.id for d in got)
    # a2 waits behind a1 (one per job in flight); the batch did not wait for it.
    assert ids == ["a1", "b1", "c1"]
    assert len({d.token for d in got}) == 3 and all(d.wait_index > 0 for d in got)
    stats = (await leader.stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest())).stats
    assert (stats.total_unacked, stats.total_pending, stats.total_ready) == (3, 1, 0)
    resp = await leader.stub.AckBatch(broker_pb2.AckBatchRequest(acks=[ack(d) for d in got]))
    assert [o.eval_id for o in resp.outcomes] == [d.evaluation.id for d in got]
    assert all(o.code == code_pb2.OK and o.index > 0 for o in resp.outcomes)
    for d in got:
        assert (await cluster.get_eval(d.evaluation.id)).status == S.EVALUATION_STATUS_COMPLETE
    # Acking a1 freed job a: a2 is deliverable now.
    assert [d.evaluation.id for d in await take(cluster, 10)] == ["a2"]


async def test_each_ack_of_a_batch_has_its_own_outcome(cluster: Cluster) -> None:
    await cluster.upsert(*(make_eval(f"m{i}") for i in range(4)))
    got = {d.evaluation.id: d for d in await take(cluster, 4)}
    assert sorted(got) == ["m0", "m1", "m2", "m3"]
    follow_up = Evaluation(id="m0-next", namespace="default", priority=50, type="service",
                           job_id="job-m0", status=S.EVALUATION_STATUS_PENDING)
    leader = await cluster.leader()
    resp = await leader.stub.AckBatch(broker_pb2.AckBatchRequest(acks=[
        ack(got["m0"], follow_ups=[follow_up]),
        broker_pb2.AckRequest(eval_id="m1", token="not-the-token"),
        broker_pb2.AckRequest(eval_id="nope", token=got["m2"].token),
        ack(got["m2"], status=S.EVALUATION_STATUS_PENDING),
        ack(got["m3"], status=S.EVALUATION_STATUS_FAILED, status_description="no nodes"),
    ]))
    outcome = {o.eval_id: o for o in resp.outcomes}
    assert (outcome["m0"].code, outcome["m3"].code) == (code_pb2.OK, code_pb2.OK)
    assert outcome["m0"].index > 0 and not outcome["m0"].reason
    assert (outcome["m1"].code, outcome["m1"].reason, outcome["m1"].index) == (
        code_pb2.FAILED_PRECONDITION, "TOKEN_MISMATCH", 0)
    assert (outcome["nope"].code, outcome["nope"].reason) == (
        code_pb2.NOT_FOUND, "UNKNOWN_EVALUATION")
    assert outcome["m2"].code == code_pb2.INVALID_ARGUMENT and "status" in outcome["m2"].message
    assert (await cluster.get_eval("m0")).status == S.EVALUATION_STATUS_COMPLETE
    assert (await cluster.get_eval("m0-next")).status == S.EVALUATION_STATUS_PENDING
    m3 = await cluster.get_eval("m3")
    assert (m3.status, m3.status_description) == (S.EVALUATION_STATUS_FAILED, "no nodes")
    # The failed acks changed nothing: m1 and m2 are still held and ack normally.
    for name in ("m1", "m2"):
        assert (await cluster.get_eval(name)).status == S.EVALUATION_STATUS_PENDING
    again = await leader.stub.AckBatch(broker_pb2.AckBatchRequest(
        acks=[ack(got["m1"]), ack(got["m2"])]))
    assert [o.code for o in again.outcomes] == [code_pb2.OK, code_pb2.OK]


async def test_batch_arguments_are_checked_before_anything_is_acked(cluster: Cluster) -> None:
    leader = await cluster.leader()
    stub = leader.stub
    too_many = broker_pb2.DequeueRequest(schedulers=["service"], max_evaluations=257)
    assert "at most 256" in await invalid(stub.Dequeue(too_many), "max_evaluations")
    await invalid(stub.AckBatch(broker_pb2.AckBatchRequest()), "acks")
    await cluster.upsert(make_eval("d0"), make_eval("d1"))
    got = await take(cluster, 2)
    assert len(got) == 2
    twice = broker_pb2.AckBatchRequest(acks=[ack(got[0]), ack(got[1]), ack(got[0])])
    assert "again" in await invalid(stub.AckBatch(twice), "acks[2].eval_id")
    unnamed = broker_pb2.AckBatchRequest(acks=[ack(got[0]), broker_pb2.AckRequest(token="t")])
    await invalid(stub.AckBatch(unnamed), "acks[1].eval_id")
    huge = broker_pb2.AckBatchRequest(
        acks=[broker_pb2.AckRequest(eval_id=f"x{i}", token="t") for i in range(257)])
    await invalid(stub.AckBatch(huge), "acks")
    # None of the refused calls acked anything.
    stats = (await stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest())).stats
    assert stats.total_unacked == 2
    for d in got:
        assert (await cluster.get_eval(d.evaluation.id)).status == S.EVALUATION_STATUS_PENDING
    resp = await stub.AckBatch(broker_pb2.AckBatchRequest(acks=[ack(d) for d in got]))
    assert [o.code for o in resp.outcomes] == [code_pb2.OK, code_pb2.OK]


@pytest.mark.parametrize("shell_config", [ShellConfig(max_txn_ops=1024)], ids=["broker-1024"])
async def test_a_broker_told_more_than_the_state_takes_its_cap_once(cluster: Cluster) -> None:
    """The broker is told etcd's --max-txn-ops is 1024, the state service
    (and the session's etcd) the default 128: the first AckBatch's txn is
    refused naming the state's cap (127), and the writer re-cuts it: 200
    acks land in two txns, not one per ack, and none is lost."""
    await cluster.upsert(*(make_eval(f"w{i}") for i in range(100)))
    await cluster.upsert(*(make_eval(f"w{i}") for i in range(100, 200)))
    got: list[broker_pb2.Delivery] = []
    while len(got) < 200:
        more = await take(cluster, 200 - len(got))
        assert more, f"only {len(got)} of 200 delivered"
        got += more
    leader = await cluster.leader()
    resp = await leader.stub.AckBatch(broker_pb2.AckBatchRequest(acks=[ack(d) for d in got]),
                                      timeout=30)
    assert all(o.code == code_pb2.OK for o in resp.outcomes), resp.outcomes[0]
    # Each ack's index is its txn's revision: 200 acks in ceil(200 / 127) txns.
    assert len({o.index for o in resp.outcomes}) == 2
    for d in got[::37]:
        assert (await cluster.get_eval(d.evaluation.id)).status == S.EVALUATION_STATUS_COMPLETE

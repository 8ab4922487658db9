"""Exact statuses of the broker's RPCs for bad input and the wrong replica."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from broker_cluster import Cluster, dequeue, make_eval
from google.rpc import code_pb2
from polling import eventually

from drover.api.broker.v1 import broker_pb2
from drover.api.types.v1.evaluation_pb2 import EvaluationStatus
from drover.broker.config import BrokerConfig
from drover.broker.core.tokens import token_term
from drover.rpc.remote import error_info, leader_hint

FAST_NACK = BrokerConfig(nack_timeout=0.3, initial_nack_delay=0.0)


async def fails(call: object, code: grpc.StatusCode, reason: str) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    err = caught.value
    assert err.code() == code, err.details()
    info = error_info(err)
    assert info is not None and info.reason == reason, (info, err.details())
    return err


async def test_follower_answers_unavailable_with_the_leader_address(cluster: Cluster) -> None:
    leader = await cluster.leader()
    follower = cluster.follower_of(leader)

    async def follower_knows() -> bool:
        return follower.app.runtime.leader_address == leader.address

    await eventually(follower_knows, what="the follower to observe the leader")
    stub = follower.stub
    for call in (
        dequeue(follower, poll=0.5),
        stub.Ack(broker_pb2.AckRequest(eval_id="x", token="t")),
        stub.AckBatch(broker_pb2.AckBatchRequest(
            acks=[broker_pb2.AckRequest(eval_id="x", token="t")])),
        stub.Nack(broker_pb2.NackRequest(eval_id="x", token="t")),
        stub.OutstandingReset(broker_pb2.OutstandingResetRequest(eval_id="x", token="t")),
        stub.ListQueue(broker_pb2.ListQueueRequest()),
        stub.CancelEvaluation(broker_pb2.CancelEvaluationRequest(eval_id="x")),
    ):
        err = await fails(call, grpc.StatusCode.UNAVAILABLE, "NOT_LEADER")
        assert leader_hint(err) == leader.address
    stats = await stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest())
    assert not stats.stats.enabled and stats.stats.leader_term == 0


async def test_bad_tokens_and_unknown_ids(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("tok"))
    got = await dequeue(leader)
    assert got.evaluation.id == "tok"
    stub = leader.stub
    await fails(stub.Ack(broker_pb2.AckRequest(eval_id="tok", token="not-the-token")),
                grpc.StatusCode.FAILED_PRECONDITION, "TOKEN_MISMATCH")
    await fails(stub.Nack(broker_pb2.NackRequest(eval_id="tok", token="")),
                grpc.StatusCode.FAILED_PRECONDITION, "TOKEN_MISMATCH")
    await fails(stub.Ack(broker_pb2.AckRequest(eval_id="nope", token=got.token)),
                grpc.StatusCode.NOT_FOUND, "UNKNOWN_EVALUATION")
    await fails(stub.Ack(broker_pb2.AckRequest(eval_id="", token=got.token)),
                grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    await fails(
        stub.Ack(broker_pb2.AckRequest(
            eval_id="tok", token=got.token,
            status=EvaluationStatus.EVALUATION_STATUS_PENDING)),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    # The failed calls changed nothing: the right token still acks.
    await stub.Ack(broker_pb2.AckRequest(eval_id="tok", token=got.token))
    await fails(stub.Ack(broker_pb2.AckRequest(eval_id="tok", token=got.token)),
                grpc.StatusCode.NOT_FOUND, "UNKNOWN_EVALUATION")


async def test_dequeue_argument_checks(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await fails(leader.stub.Dequeue(broker_pb2.DequeueRequest()),
                grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    negative = broker_pb2.DequeueRequest(schedulers=["service"])
    negative.timeout.FromMilliseconds(-5)
    await fails(leader.stub.Dequeue(negative), grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_ARGUMENT")
    empty = await dequeue(leader, "batch", poll=0.2)
    assert not empty.HasField("evaluation") and not empty.token


@pytest.mark.parametrize("broker_config", [FAST_NACK])
async def test_ack_after_the_nack_timeout_fails_and_reset_extends(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("slow"), make_eval("kept"))
    first = await dequeue(leader)
    second = await dequeue(leader)
    held = {first.evaluation.id: first.token, second.evaluation.id: second.token}
    for _ in range(4):  # keep "kept" alive past several nack timeouts
        await asyncio.sleep(0.15)
        await leader.stub.OutstandingReset(
            broker_pb2.OutstandingResetRequest(eval_id="kept", token=held["kept"]))
    err = await fails(leader.stub.Ack(broker_pb2.AckRequest(eval_id="slow", token=held["slow"])),
                      grpc.StatusCode.FAILED_PRECONDITION, "TOKEN_EXPIRED")
    assert "expired" in (err.details() or "")
    await leader.stub.Ack(broker_pb2.AckRequest(eval_id="kept", token=held["kept"]))
    again = await dequeue(leader)  # the timed-out one is delivered again
    assert again.evaluation.id == "slow" and again.token != held["slow"]


async def test_cancel_evaluation(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("busy", job="j"), make_eval("queued", job="j"))
    got = await dequeue(leader)
    assert got.evaluation.id == "busy"
    await fails(leader.stub.CancelEvaluation(broker_pb2.CancelEvaluationRequest(eval_id="busy")),
                grpc.StatusCode.FAILED_PRECONDITION, "EVALUATION_IN_FLIGHT")
    await fails(leader.stub.CancelEvaluation(broker_pb2.CancelEvaluationRequest(eval_id="zz")),
                grpc.StatusCode.NOT_FOUND, "UNKNOWN_EVALUATION")
    resp = await leader.stub.CancelEvaluation(
        broker_pb2.CancelEvaluationRequest(eval_id="queued", reason="backlog"))
    assert resp.index > 0
    stored = await cluster.get_eval("queued")
    assert stored.status == EvaluationStatus.EVALUATION_STATUS_CANCELED
    assert stored.status_description == "canceled by an operator: backlog"


async def test_an_ack_of_an_earlier_terms_delivery_is_refused_fence_lost(
        cluster: Cluster) -> None:
    """An Ack is fenced with the term its token carries, not the current one.

    Revoke kills every token, so this is the defence in depth for a core
    that still holds a delivery of a past term (the core re-stamped for two
    terms without standby in between): its outcome must be refused by the
    state (FENCE_LOST), written nowhere, and the current term must stand.
    """
    leader = await cluster.leader()
    runtime = leader.app.runtime
    assert runtime.term is not None
    now = runtime.term.revision
    # The earlier term: a revision of the store that is not the leader key's
    # create revision (the state compares the key's create revision).
    earlier = now - 1
    await cluster.upsert(make_eval("old-term"))
    await cluster.upsert(make_eval("this-term"))
    runtime.core.enable(earlier)  # a leader core: only the token term changes
    try:
        old = await dequeue(leader)
    finally:
        runtime.core.enable(now)
    assert old.evaluation.id == "old-term" and token_term(old.token) == earlier
    new = await dequeue(leader)
    assert new.evaluation.id == "this-term" and token_term(new.token) == now
    stub = leader.stub
    await fails(stub.Ack(broker_pb2.AckRequest(eval_id="old-term", token=old.token)),
                grpc.StatusCode.FAILED_PRECONDITION, "FENCE_LOST")
    # The batch: the old term's ack fails alone, the current one is written.
    resp = await stub.AckBatch(broker_pb2.AckBatchRequest(acks=[
        broker_pb2.AckRequest(eval_id="old-term", token=old.token),
        broker_pb2.AckRequest(eval_id="this-term", token=new.token)]), timeout=10)
    refused, written = resp.outcomes
    assert (refused.code, refused.reason) == (code_pb2.FAILED_PRECONDITION, "FENCE_LOST")
    assert written.code == code_pb2.OK and written.index > 0
    stored = await cluster.get_eval("old-term")
    assert stored.status == EvaluationStatus.EVALUATION_STATUS_PENDING
    assert stored.modify_index == old.evaluation.modify_index
    assert (await cluster.get_eval("this-term")).status == \
        EvaluationStatus.EVALUATION_STATUS_COMPLETE
    # The refusal was the old delivery's, not the term's: it still leads.
    assert runtime.term is not None and runtime.term.revision == now
    assert leader.leading

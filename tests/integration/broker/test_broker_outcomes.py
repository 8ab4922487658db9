"""Broker outcomes are updates: an Ack never re-creates a deleted evaluation.

The race of issue #14: a worker holds an evaluation, an operator deletes it
(broker paused) and the worker acks at the same moment. Before, the Ack was
a create-or-update and brought the evaluation back about one time in three.
Now it is an update compared on the index the broker handed out, so the
delete wins or the Ack lands first and is deleted after: never both.
"""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest
from broker_cluster import Cluster, dequeue, make_eval
from google.rpc import code_pb2

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1.scheduler_pb2 import SchedulerConfig
from drover.rpc.remote import error_info

ROUNDS = 12
# Why a refused Ack may say NOT_FOUND: state refused the update (the broker
# still held it) or the broker had already seen the delete.
GONE = {"EVALUATION_GONE", "UNKNOWN_EVALUATION"}


async def _pause(cluster: Cluster, paused: bool) -> None:
    await cluster.state_stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=SchedulerConfig(pause_eval_broker=paused)), timeout=10)


async def _exists(cluster: Cluster, eval_id: str) -> bool:
    try:
        await cluster.get_eval(eval_id)
    except grpc.aio.AioRpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND
        return False
    return True


async def _ack(leader, got: broker_pb2.DequeueResponse, batch: bool) -> tuple[int, str]:
    """(grpc code, reason) of the worker's ack; (OK, "") when it was written."""
    if batch:
        resp = await leader.stub.AckBatch(broker_pb2.AckBatchRequest(acks=[
            broker_pb2.AckRequest(eval_id=got.evaluation.id, token=got.token)]), timeout=10)
        outcome = resp.outcomes[0]
        return outcome.code, outcome.reason
    try:
        await leader.stub.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id,
                                                    token=got.token), timeout=10)
    except grpc.aio.AioRpcError as err:
        info = error_info(err)
        return err.code().value[0], info.reason if info else ""
    return code_pb2.OK, ""


@pytest.mark.slow
async def test_an_ack_racing_a_delete_never_brings_the_evaluation_back(
        cluster: Cluster) -> None:
    rnd = random.Random(14)
    leader = await cluster.leader()
    outcomes: dict[str, int] = {}
    for n in range(ROUNDS):
        eval_id = f"race{n}"
        await cluster.upsert(make_eval(eval_id))
        got = await dequeue(leader)
        assert got.evaluation.id == eval_id
        await _pause(cluster, True)
        delete = cluster.state_stub.DeleteEvaluations(
            state_pb2.DeleteEvaluationsRequest(ids=[eval_id]), timeout=10)
        batch = n % 2 == 1
        if rnd.random() < 0.5:
            # The delete is durable before the ack is sent (the broker may
            # not have seen it yet): the ack must be refused.
            deleted = await delete
            code, reason = await _ack(leader, got, batch)
            assert deleted.deleted == 1
            assert (code, reason in GONE) == (code_pb2.NOT_FOUND, True), (code, reason)
        else:
            deleted, (code, reason) = await asyncio.gather(delete, _ack(leader, got, batch))
            assert deleted.deleted == 1
            assert code == code_pb2.OK or (code, reason in GONE) == (code_pb2.NOT_FOUND, True)
        outcomes[reason or "OK"] = outcomes.get(reason or "OK", 0) + 1
        # Let the broker apply everything, then look: never re-created.
        index = (await cluster.state_stub.ListEvaluations(
            state_pb2.ListEvaluationsRequest(namespace="*", page_size=1))).meta.index
        await asyncio.wait_for(leader.app.runtime.feed.wait_applied(index), 5)
        assert not await _exists(cluster, eval_id), f"round {n}: {eval_id} came back"
        await _pause(cluster, False)
    assert outcomes.get("EVALUATION_GONE", 0) + outcomes.get("UNKNOWN_EVALUATION", 0) > 0

"""The broker end to end: an evaluation written to the state store is
delivered by the leader and acked; the ack lands in the store."""

from __future__ import annotations

from broker_cluster import Cluster, dequeue, make_eval
from polling import eventually

from drover.api.broker.v1 import broker_pb2
from drover.api.types.v1.evaluation_pb2 import EvaluationStatus


async def test_enqueue_dequeue_ack_roundtrip(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("e1"))
    got = await dequeue(leader)
    assert got.evaluation.id == "e1"
    assert got.token
    assert got.wait_index >= got.evaluation.create_index > 0
    resp = await leader.stub.Ack(broker_pb2.AckRequest(eval_id="e1", token=got.token))
    assert resp.index > 0
    stored = await cluster.get_eval("e1")
    assert stored.status == EvaluationStatus.EVALUATION_STATUS_COMPLETE
    follower = cluster.follower_of(leader)

    async def standby_forgot() -> bool:
        return follower.app.core.get("e1") is None

    await eventually(standby_forgot, what="the standby to see the ack")

"""Operator-facing behaviour: ListQueue, stats, pause/resume, supersede and
delivery-limit failures as the state store records them."""

from __future__ import annotations

import random
import time

import grpc
import pytest
from broker_cluster import Cluster, dequeue, make_eval
from polling import eventually

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1.evaluation_pb2 import EvaluationStatus
from drover.api.types.v1.scheduler_pb2 import SchedulerConfig
from drover.broker.config import BrokerConfig
from drover.broker.core.broker import EvalBroker
from drover.broker.core.queue_view import QueueView
from drover.config import EtcdSettings
from drover.coord import Keyspace, cluster_secret, connect
from drover.coord.etcd_kv import EtcdKV
from drover.paging import CLUSTER_SECRET, PageTokenCodec
from drover.rpc.remote import error_info

_S = EvaluationStatus


async def test_list_queue_pages_and_filters(cluster: Cluster) -> None:
    leader = await cluster.leader()
    # q10 and q11 share job0 and one txn (same create index): the first one
    # held wins the pending place, q11 is cancelled as superseded; 11 held.
    await cluster.upsert(*[make_eval(f"q{i:02d}", job=f"job{i if i < 10 else 0}")
                           for i in range(12)])
    await eventually(lambda: _ready(leader, 10), what="10 ready")
    first = await dequeue(leader)  # one unacked
    stub = leader.stub
    seen: list[str] = []
    token = ""
    while True:
        resp = await stub.ListQueue(broker_pb2.ListQueueRequest(page_size=5, page_token=token))
        assert len(resp.evaluations) <= 5
        seen += [q.evaluation.id for q in resp.evaluations]
        token = resp.next_page_token
        if not token:
            break
    assert seen == [f"q{i:02d}" for i in range(10)] + ["q10"]

    unacked = await stub.ListQueue(broker_pb2.ListQueueRequest(filter='state == "unacked"'))
    assert [q.evaluation.id for q in unacked.evaluations] == [first.evaluation.id]
    assert unacked.evaluations[0].state == broker_pb2.QUEUE_STATE_UNACKED
    assert unacked.evaluations[0].deliveries == 1
    pending = await stub.ListQueue(broker_pb2.ListQueueRequest(
        filter='state == "pending" && job_id == "job0"', order_by="create_index desc"))
    assert [q.evaluation.id for q in pending.evaluations] == ["q10"]

    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.ListQueue(broker_pb2.ListQueueRequest(filter='state == '))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(bad.value).reason == "INVALID_FILTER"  # type: ignore[union-attr]

    page = await stub.ListQueue(broker_pb2.ListQueueRequest(page_size=2))
    tampered = page.next_page_token[:-2] + ("AA" if page.next_page_token[-2:] != "AA" else "BB")
    for req in (broker_pb2.ListQueueRequest(page_size=2, page_token=tampered),
                broker_pb2.ListQueueRequest(page_size=3, page_token=page.next_page_token)):
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await stub.ListQueue(req)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_info(bad.value).reason == "INVALID_PAGE_TOKEN"  # type: ignore[union-attr]


async def test_stats_by_scheduler(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("s1"), make_eval("s2"), make_eval("b1", scheduler="batch"))
    await eventually(lambda: _ready(leader, 3), what="3 ready")
    got = await dequeue(leader, "batch")
    await leader.stub.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id, token=got.token))
    await dequeue(leader, "service")
    stats = (await leader.stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest())).stats
    assert stats.enabled and stats.leader_term > 0
    assert (stats.total_ready, stats.total_unacked) == (1, 1)
    assert stats.by_scheduler["service"].ready == 1
    assert stats.by_scheduler["service"].unacked == 1
    assert "batch" not in stats.by_scheduler
    assert stats.processing.count == 1 and stats.ready_wait.count == 2


async def _ready(node: object, n: int) -> bool:
    return node.app.core.stats().total_ready == n  # type: ignore[attr-defined,no-any-return]


async def test_pause_stops_deliveries_and_resume_restores(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.state_stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=SchedulerConfig(pause_eval_broker=True)))
    await eventually(lambda: _paused(leader, True), what="the broker to pause")
    await cluster.upsert(make_eval("p1"), make_eval("p2"))
    start = time.monotonic()
    empty = await dequeue(leader, poll=0.4)
    assert not empty.token and time.monotonic() - start >= 0.35
    # Deleting while paused is what pausing is for; the broker follows.
    await cluster.state_stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(ids=["p2"]))
    parked = dequeue(leader, poll=3.0)
    await cluster.state_stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=SchedulerConfig(pause_eval_broker=False)))
    got = await parked  # the open long poll is served on resume
    assert got.evaluation.id == "p1"
    nothing = await dequeue(leader, poll=0.2)
    assert not nothing.token


async def _paused(node: object, paused: bool) -> bool:
    return node.app.core.paused is paused  # type: ignore[attr-defined,no-any-return]


async def test_superseded_pending_evaluations_are_cancelled_at_once(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("a", job="web"))
    busy = await dequeue(leader)
    await cluster.upsert(make_eval("b", job="web"))
    await cluster.upsert(make_eval("c", job="web"))

    async def b_cancelled() -> bool:
        return (await cluster.get_eval("b")).status == _S.EVALUATION_STATUS_CANCELED

    await eventually(b_cancelled, what="b cancelled in the store")
    assert "superseded by evaluation c" in (await cluster.get_eval("b")).status_description
    await leader.stub.Ack(broker_pb2.AckRequest(eval_id="a", token=busy.token))
    nxt = await dequeue(leader)
    assert nxt.evaluation.id == "c"
    assert nxt.wait_index >= (await cluster.get_eval("b")).create_index


@pytest.mark.parametrize("broker_config", [
    BrokerConfig(delivery_limit=2, initial_nack_delay=0.0, failed_follow_up_base=600.0),
])
async def test_delivery_limit_fails_with_a_delayed_follow_up(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(make_eval("poison", job="p"), make_eval("after", job="p"))
    for _ in range(2):
        got = await dequeue(leader)
        assert got.evaluation.id == "poison"
        await leader.stub.Nack(broker_pb2.NackRequest(eval_id="poison", token=got.token))

    async def failed() -> bool:
        return (await cluster.get_eval("poison")).status == _S.EVALUATION_STATUS_FAILED

    await eventually(failed, what="poison failed in the store")
    poison = await cluster.get_eval("poison")
    follow_up = await cluster.get_eval(poison.next_eval)
    assert follow_up.status == _S.EVALUATION_STATUS_PENDING
    assert follow_up.previous_eval == "poison"
    assert follow_up.wait_until.seconds > time.time() + 500
    # The job's slot is free once the failure is written: the next one runs.
    nxt = await dequeue(leader)
    assert nxt.evaluation.id == "after"
    waiting = await leader.stub.ListQueue(broker_pb2.ListQueueRequest(filter='state == "waiting"'))
    assert [q.evaluation.id for q in waiting.evaluations] == [poison.next_eval]


async def test_list_queue_tokens_are_signed_with_the_cluster_secret(cluster: Cluster) -> None:
    leader = await cluster.leader()
    await cluster.upsert(*[make_eval(f"s{i}") for i in range(3)])
    await eventually(lambda: _ready(leader, 3), what="3 ready")
    request = broker_pb2.ListQueueRequest(page_size=1)
    issued = (await leader.stub.ListQueue(request)).next_page_token
    assert issued
    client = await connect(EtcdSettings(endpoints=(cluster.etcd,)), purpose="control")
    try:
        secret = await cluster_secret(EtcdKV(client), Keyspace(cluster.prefix), CLUSTER_SECRET)
    finally:
        await client.close()
    held = [await cluster.get_eval(f"s{i}") for i in range(3)]

    def token_under(codec: PageTokenCodec) -> str:
        # The same page over the same evaluations, signed locally.
        core = EvalBroker(BrokerConfig(), clock=time.monotonic, rng=random.Random(0),
                          wall_clock=time.time)
        core.standby()
        core.restore(held)
        return QueueView(core, codec).page(request).next_page_token

    assert token_under(PageTokenCodec(secret)) == issued
    forged = token_under(PageTokenCodec())  # the public default key
    assert forged != issued
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await leader.stub.ListQueue(broker_pb2.ListQueueRequest(page_size=1, page_token=forged))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info(caught.value)
    assert info is not None and info.reason == "INVALID_PAGE_TOKEN"

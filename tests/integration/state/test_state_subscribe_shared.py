"""Subscribe with the shared encoding (each event encoded once per change,
the same bytes handed to every stream): several subscribers, the same or
different interests, each gets every event it asked for exactly once and in
revision order; a subscriber that stops reading is ended with
RESOURCE_EXHAUSTED ``SUBSCRIBER_TOO_SLOW`` after a gap-free prefix, while
the others carry on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from state_harness import StateReplica, start_state, state_config_with

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2
from drover.coord.keys import Keyspace
from drover.rpc.remote import error_info
from drover.state.config import SubscribeConfig

Seen = list[tuple[int, str, int]]  # (index, key, event type) in arrival order


def _evals(rev: int, n: int, ns: str = "default", pad: int = 0) -> list[evaluation_pb2.Evaluation]:
    return [evaluation_pb2.Evaluation(id=f"s{rev}-{i}", namespace=ns, type="service",
                                      job_id=f"job{i}", status_description="x" * pad)
            for i in range(n)]


async def _read_until(call: grpc.aio.UnaryStreamCall, last: int | list[int],
                      seen: Seen) -> None:
    """Read into ``seen`` until an index >= ``last`` (a list: its first item,
    which may be set while this reads)."""
    while True:
        resp = await call.read()
        if resp is grpc.aio.EOF:
            return
        for ev in resp.events:
            seen.append((ev.index, ev.key, ev.type))
            assert ev.index == resp.index
            if ev.type == state_pb2.EVENT_TYPE_UPSERT:
                assert ev.evaluation.id == ev.key and ev.evaluation.modify_index == ev.index
        if resp.index >= (last[0] if isinstance(last, list) else last):
            return


def _in_order_once(seen: Seen) -> None:
    indexes = [i for i, _, _ in seen]
    assert indexes == sorted(indexes)
    assert len(set(seen)) == len(seen)


@pytest.fixture
async def small_buffer(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[StateReplica]:
    r = await start_state(etcd_endpoint, keyspace,
                          config=state_config_with(subscribe=SubscribeConfig(buffer_revisions=4)))
    try:
        yield r
    finally:
        await r.close()


async def test_several_subscribers_get_every_event_once_in_order(replica: StateReplica) -> None:
    stub = replica.stub
    requests = [state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_EVALUATION]),
                state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_EVALUATION]),
                state_pb2.SubscribeRequest(namespace="other"),
                state_pb2.SubscribeRequest(keys=["s3-0", "s7-1"])]
    for request in requests:  # filtered streams see the last index by heartbeat
        request.heartbeat_interval.FromMilliseconds(100)
    calls = [stub.Subscribe(request, timeout=30) for request in requests]
    start = 0
    for call in calls:  # each stream's catch-up mark: subscribed from here on
        start = max(start, (await call.read()).index)
    expected: Seen = []
    for rev in range(12):
        ns = "other" if rev % 3 == 0 else "default"
        r = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=_evals(rev, 3, ns)))
        expected += [(r.index, f"s{rev}-{i}", state_pb2.EVENT_TYPE_UPSERT) for i in range(3)]
    last = expected[-1][0]
    # A late subscriber replays the same revisions from the ring.
    calls.append(stub.Subscribe(state_pb2.SubscribeRequest(
        topics=[state_pb2.TOPIC_EVALUATION], from_index=start), timeout=30))
    seen: list[Seen] = [[] for _ in calls]
    await asyncio.wait_for(asyncio.gather(
        *(_read_until(c, last, s) for c, s in zip(calls, seen, strict=True))), 20)
    for call in calls:
        call.cancel()
    other = {f"s{rev}-{i}" for rev in range(0, 12, 3) for i in range(3)}
    wants = [lambda k: True, lambda k: True, lambda k: k in other,
             lambda k: k in ("s3-0", "s7-1"), lambda k: True]
    for got, want in zip(seen, wants, strict=True):
        _in_order_once(got)
        # Exactly the wanted events, each revision's as one group.
        assert sorted(got) == sorted(e for e in expected if want(e[1]))
        assert [i for i, _, _ in got] == [i for i, k, _ in expected if want(k)]


async def test_a_subscriber_that_stops_reading_ends_too_slow_others_carry_on(
    small_buffer: StateReplica,
) -> None:
    stub = small_buffer.stub
    request = state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_EVALUATION])
    request.heartbeat_interval.FromMilliseconds(100)
    # The slow reader: its own connection with a fixed window, so the server
    # cannot push far ahead of what it reads.
    slow_ch = grpc.aio.insecure_channel(
        small_buffer.address, options=[("grpc.http2.bdp_probe", 0)])
    try:
        slow = state_pb2_grpc.StateServiceStub(slow_ch).Subscribe(request, timeout=60)
        fast = stub.Subscribe(request, timeout=60)
        await slow.read()
        await fast.read()
        fast_seen: Seen = []
        expected: Seen = []
        stop = [2**62]
        reader = asyncio.create_task(_read_until(fast, stop, fast_seen))
        for rev in range(120):  # ~64 KB a revision: far past the slow window
            r = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
                evaluations=_evals(rev, 8, pad=8000)))
            expected += [(r.index, f"s{rev}-{i}", state_pb2.EVENT_TYPE_UPSERT)
                         for i in range(8)]
        slow_seen: Seen = []
        with pytest.raises(grpc.RpcError) as err:
            await asyncio.wait_for(_read_until(slow, 2**62, slow_seen), 30)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        info = error_info(err.value)
        assert info is not None and info.reason == "SUBSCRIBER_TOO_SLOW"
        # What it got before the end is a gap-free prefix, in order, once each.
        assert slow_seen == expected[:len(slow_seen)] and len(slow_seen) < len(expected)
        # The fast one, on the same shared batches, got everything.
        stop[0] = expected[-1][0]
        await asyncio.wait_for(reader, 30)
        fast.cancel()
        _in_order_once(fast_seen)
        assert fast_seen == expected
    finally:
        await slow_ch.close()

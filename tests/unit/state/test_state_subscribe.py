"""Subscribe's events encoded once per change: the bytes a stream sends are
exactly the proto it used to build, each change is encoded at most once per
batch, and subscribers of the same interest share the very same bytes."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, job_pb2
from drover.coord.errors import EtcdUnavailable
from drover.rpc.encoded import passthrough
from drover.state import subscribe
from drover.state.cache import Change
from drover.state.core import codec
from drover.state.subscribe import Interest, _Batch, encode_responses, event_chunk

EVAL = codec.EVALUATIONS


def _eval(i: int, job: str = "j") -> bytes:
    return codec.encode(evaluation_pb2.Evaluation(
        id=f"e{i}", namespace="default", job_id=job, priority=50, type="service",
        create_index=99, modify_index=98))


def _changes() -> list[Change]:
    # Revision 10: two evaluations of one txn; 11: a job; 12: a delete; 13: one more.
    job = codec.encode(job_pb2.Job(id="web", namespace="default"))
    return [
        Change(EVAL, "default", "e1", 10, False, _eval(1), 10),
        Change(EVAL, "default", "e2", 10, False, _eval(2), 10),
        Change(codec.JOBS, "default", "web", 11, False, job, 11),
        Change(EVAL, "default", "e1", 12, True, b"", 10),
        Change(EVAL, "other", "e3", 13, False, _eval(3, job=""), 7),
    ]


def _expected(changes: list[Change], interest: Interest, after: int = 0) -> list[bytes]:
    """What the hub built before: whole protos, decoded per change, serialized."""
    out: list[state_pb2.SubscribeResponse] = []
    for c in changes:
        if c.revision <= after or not interest.wants(c):
            continue
        if not out or out[-1].index != c.revision:
            out.append(state_pb2.SubscribeResponse(index=c.revision))
        ev = out[-1].events.add(
            topic=codec.TOPICS[c.kind],
            namespace=c.namespace, key=c.id, index=c.revision,
            type=state_pb2.EVENT_TYPE_DELETE if c.deleted else state_pb2.EVENT_TYPE_UPSERT)
        if not c.deleted:
            getattr(ev, codec.PAYLOAD_FIELD[c.kind]).CopyFrom(
                codec.decode(c.kind, c.value, c.create_revision, c.revision))
    return [r.SerializeToString() for r in out]


INTERESTS = [
    Interest(frozenset(), frozenset(), ""),
    Interest(frozenset({state_pb2.TOPIC_EVALUATION}), frozenset(), ""),
    Interest(frozenset(), frozenset({"e1", "web"}), ""),
    Interest(frozenset(), frozenset(), "other"),
]


def test_encoded_responses_are_byte_for_byte_the_protos_they_replace() -> None:
    changes = _changes()
    for interest in INTERESTS:
        for after in (0, 10, 11, 13):
            got = encode_responses(changes, interest, after)
            assert got == _expected(changes, interest, after), (interest, after)
    parsed = state_pb2.SubscribeResponse.FromString(encode_responses(changes, INTERESTS[0])[0])
    assert parsed.index == 10 and [e.key for e in parsed.events] == ["e1", "e2"]
    ev = parsed.events[0].evaluation
    # Indexes come from etcd, not from the stored value; job_modify_index is resolved.
    assert (ev.create_index, ev.modify_index, ev.job_modify_index) == (10, 10, 10)


def test_a_batch_encodes_each_change_once_and_shares_bytes_per_interest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    changes = _changes()
    encoded: list[str] = []

    def counting(c: Change) -> bytes:
        encoded.append(f"{c.id}@{c.revision}")
        return event_chunk(c)

    monkeypatch.setattr(subscribe, "event_chunk", counting)
    batch = _Batch(13, changes)
    first = batch.encoded(Interest(frozenset(), frozenset(), ""), 0)
    again = batch.encoded(Interest(frozenset(), frozenset(), ""), 0)  # an equal interest
    assert again is first and first == _expected(changes, INTERESTS[0])
    for interest in INTERESTS[1:]:
        assert batch.encoded(interest, 0) == _expected(changes, interest)
    # A stream that started inside the batch gets its own cut, same chunks.
    assert batch.encoded(INTERESTS[0], 11) == _expected(changes, INTERESTS[0], 11)
    # Five changes, four interests, five cuts: each change encoded once.
    assert sorted(encoded) == sorted(f"{c.id}@{c.revision}" for c in changes)


def test_a_batch_encodes_nothing_nobody_wants(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[Change] = []

    def recording(c: Change) -> bytes:
        encoded.append(c)
        return b""

    monkeypatch.setattr(subscribe, "event_chunk", recording)
    batch = _Batch(13, _changes())
    assert batch.encoded(Interest(frozenset({state_pb2.TOPIC_NODE}), frozenset(), ""), 0) == []
    assert encoded == []


def test_codec_encode_leaves_the_message_untouched() -> None:
    ev = evaluation_pb2.Evaluation(id="x", job_id="j", create_index=5, modify_index=6,
                                   status_description="d")
    before = ev.SerializeToString()
    stored = codec.encode(ev)
    assert ev.SerializeToString() == before
    assert (ev.create_index, ev.modify_index) == (5, 6)
    back = evaluation_pb2.Evaluation.FromString(stored)
    assert (back.create_index, back.modify_index, back.id) == (0, 0, "x")
    bare = evaluation_pb2.Evaluation(id="y")
    assert codec.encode(bare) == bare.SerializeToString()


def test_passthrough_serializer_leaves_bytes_and_serializes_messages() -> None:
    ser = passthrough(state_pb2.SubscribeResponse.SerializeToString)
    raw = state_pb2.SubscribeResponse(index=3).SerializeToString()
    assert ser(raw) is raw
    assert ser(state_pb2.SubscribeResponse(index=3)) == raw
    assert isinstance(grpc.unary_stream_rpc_method_handler(
        lambda r, c: iter(()), response_serializer=ser), grpc.RpcMethodHandler)


class _LostCache:
    """A cache cut from etcd: silent for a minute, and a consistent read
    fails (``reachable`` False) -- or succeeds once it is back."""

    def __init__(self, reachable: bool) -> None:
        self.listeners: list[object] = []
        self.reset_listeners: list[object] = []
        self.revision = 5
        self.reachable = reachable
        self.syncs = 0

    def last_contact(self) -> float:
        return 60.0

    async def sync(self) -> int:
        self.syncs += 1
        if not self.reachable:
            raise EtcdUnavailable("etcd did not answer")
        return self.revision


async def _first_items(hub: subscribe.Hub, n: int) -> list[bytes]:
    stream = hub.subscribe(state_pb2.SubscribeRequest())
    return [await anext(stream) for _ in range(n)]


async def test_a_replica_cut_from_etcd_ends_its_streams_instead_of_heartbeating() -> None:
    cache = _LostCache(reachable=False)
    hub = subscribe.Hub(cache, subscribe.SubscribeConfig(  # type: ignore[arg-type]
        heartbeat=0.2, max_silence=3.0, silence_check=0.05))
    with pytest.raises(EtcdUnavailable):
        async with asyncio.timeout(2):
            await _first_items(hub, 2)  # the catch-up mark, then the end
    # Silent but reachable (a quiet etcd, no readiness checks): one read
    # proves contact and the stream heartbeats on.
    cache.reachable = True
    async with asyncio.timeout(2):
        got = await _first_items(hub, 3)
    assert all(state_pb2.SubscribeResponse.FromString(b).index == 5 for b in got)
    assert cache.syncs >= 2

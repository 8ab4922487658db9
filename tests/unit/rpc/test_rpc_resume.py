"""StreamCursor: a Subscribe stream resumed elsewhere has no gap and no duplicate."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.rpc.resume import RESUMABLE, StreamCursor


def resp(index: int, *keys: str) -> bytes:
    return state_pb2.SubscribeResponse(
        index=index, events=[state_pb2.Event(key=k, index=index) for k in keys]
    ).SerializeToString()


def test_before_any_message_the_client_request_is_resent_unchanged() -> None:
    request = state_pb2.SubscribeRequest(namespace="default", keys=["a"]).SerializeToString()
    cursor = StreamCursor(request)
    assert cursor.resume_request() == request


def test_heartbeats_are_asked_at_least_as_often_as_the_proxy_needs() -> None:
    def asked(client_ms: int | None) -> float:
        req = state_pb2.SubscribeRequest(from_index=4)
        if client_ms is not None:
            req.heartbeat_interval.FromMilliseconds(client_ms)
        sent = StreamCursor(req.SerializeToString(), heartbeat=1.5).resume_request()
        got = state_pb2.SubscribeRequest.FromString(sent)
        assert got.from_index == 4
        return got.heartbeat_interval.ToMilliseconds() / 1000

    assert asked(None) == 1.5
    assert asked(0) == 1.5
    assert asked(10_000) == 1.5  # longer than the proxy can wait: shortened
    assert asked(200) == 0.2  # the client's shorter wish stands


def test_resumes_from_the_last_delivered_index_keeping_the_filter() -> None:
    request = state_pb2.SubscribeRequest(
        namespace="default", keys=["a"], from_index=3
    ).SerializeToString()
    cursor = StreamCursor(request)
    assert cursor.admit(resp(5, "a")) and cursor.admit(resp(9))
    again = state_pb2.SubscribeRequest.FromString(cursor.resume_request())
    assert (again.from_index, list(again.keys), again.namespace) == (9, ["a"], "default")


def test_stale_and_repeated_indexes_from_the_new_replica_are_dropped() -> None:
    """The new replica's cache may lag: its first heartbeat can be older."""
    cursor = StreamCursor(state_pb2.SubscribeRequest().SerializeToString())
    delivered = [m for m in (resp(7, "x"), resp(8, "y")) if cursor.admit(m)]
    # Resumed elsewhere: a lagging heartbeat, a replayed revision, then news.
    delivered += [m for m in (resp(6), resp(8, "y"), resp(10, "z")) if cursor.admit(m)]
    indexes = [state_pb2.SubscribeResponse.FromString(m).index for m in delivered]
    assert indexes == [7, 8, 10]
    assert cursor.dropped == 2 and cursor.delivered == 10


def test_only_subscribe_is_resumable() -> None:
    assert RESUMABLE == {"/drover.state.v1.StateService/Subscribe"}


def test_an_undecodable_request_is_passed_on_for_the_replica_to_refuse() -> None:
    garbage = b"\xff" * 16
    cursor = StreamCursor(garbage, heartbeat=1.5)
    assert cursor.resume_request() == garbage

"""A client's heartbeat schedule (:mod:`drover.worker.heartbeats`): each node
heartbeats when the TTL of its last answer has passed; one schedule for all."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.worker.heartbeats import HeartbeatSchedule


def _answer(ttl: float | None) -> state_pb2.UpdateNodeStatusResponse:
    resp = state_pb2.UpdateNodeStatusResponse(index=1)
    if ttl is not None:
        resp.heartbeat_ttl.FromMilliseconds(int(ttl * 1000))
    return resp


def test_each_node_heartbeats_when_its_ttl_has_passed() -> None:
    s = HeartbeatSchedule(fallback=3.0)
    s.add("n1", 0.0)
    s.add("n2", 0.0)
    assert s.due(0.0) == ["n1", "n2"]
    assert s.answered("n1", 0.0, _answer(200.0)) == 200.0
    assert s.answered("n2", 0.0, _answer(12.5)) == 12.5
    assert s.due(12.4) == []
    assert s.next_at() == 12.5
    assert s.due(12.5) == ["n2"]
    assert s.due(199.9) == []
    assert s.due(200.0) == ["n1"]


def test_an_answer_without_a_ttl_falls_back() -> None:
    s = HeartbeatSchedule(fallback=3.0)
    assert s.answered("n1", 10.0, _answer(None)) == 3.0
    assert s.next_at() == 13.0


def test_a_failed_heartbeat_is_retried_soon_and_never_past_the_ttl() -> None:
    s = HeartbeatSchedule(fallback=3.0, retry=1.0)
    s.answered("n1", 0.0, _answer(200.0))
    s.due(200.0)
    s.failed("n1", 200.0)
    assert s.next_at() == 201.0
    short = HeartbeatSchedule(fallback=0.5, retry=1.0)
    short.failed("n1", 0.0)
    assert short.next_at() == 0.5

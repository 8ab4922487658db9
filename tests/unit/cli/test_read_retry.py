"""Reads wait out a leader election within their timeout; writes, a stale
ACL view and a drover that is not there at all are answered at once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from drover.cli.read_retry import ReadRetryChannel

READ = "/drover.state.v1.StateService/ListJobs"
WRITE = "/drover.state.v1.StateService/UpsertJob"


def unavailable(reason: str = "", *, answered: bool = True) -> grpc.aio.AioRpcError:
    trailing: list[tuple[str, str | bytes]] = []
    if answered:
        status = status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message="x")
        if reason:
            detail = any_pb2.Any()
            detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="drover"))
            status.details.append(detail)
        trailing.append(("grpc-status-details-bin", status.SerializeToString()))
    return grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
                                grpc.aio.Metadata(*trailing), details="x")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.pauses.append(s)
        self.now += s


class Script:
    """A multi-callable that fails with ``errors`` in turn, then answers."""

    def __init__(self, errors: Sequence[grpc.aio.AioRpcError]) -> None:
        self.errors, self.calls, self.timeouts = list(errors), 0, list[float]()

    async def __call__(self, request: Any, *, timeout: float, **kw: Any) -> str:  # noqa: ASYNC109
        self.calls += 1
        self.timeouts.append(timeout)
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


class Inner:
    def __init__(self, script: Script) -> None:
        self.script = script

    def unary_unary(self, method: str, *a: Any, **k: Any) -> Script:
        return self.script


def _channel(script: Script, clock: Clock, *, listening: bool = True) -> ReadRetryChannel:
    return ReadRetryChannel(Inner(script), ["127.0.0.1:7100"], clock=clock, sleep=clock.sleep,
                            probe=lambda _a: listening)


def test_a_read_waits_out_an_election() -> None:
    clock = Clock()
    script = Script([unavailable("NOT_LEADER"), unavailable("NO_SERVER"),
                     unavailable(answered=False)])  # the dead leader's error, relayed
    ch = _channel(script, clock)
    assert asyncio.run(ch.unary_unary(READ)(object(), timeout=10)) == "ok"
    assert script.calls == 4 and clock.pauses == [0.1, 0.2, 0.4]
    assert script.timeouts[0] == 10 and script.timeouts[-1] == pytest.approx(10 - 0.7)


def test_a_write_is_answered_with_its_first_status() -> None:
    clock = Clock()
    script = Script([unavailable("NOT_LEADER")])
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_channel(script, clock).unary_unary(WRITE)(object(), timeout=10))
    assert script.calls == 1 and clock.pauses == []


def test_a_stale_acl_view_is_not_waited_on() -> None:
    clock = Clock()
    script = Script([unavailable("ACL_DATA_STALE")])
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_channel(script, clock).unary_unary(READ)(object(), timeout=10))
    assert script.calls == 1


def test_nothing_listening_fails_at_once() -> None:
    clock = Clock()
    script = Script([unavailable(answered=False)])
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_channel(script, clock, listening=False).unary_unary(READ)(
            object(), timeout=10))
    assert script.calls == 1


def test_the_timeout_bounds_every_attempt_and_pause() -> None:
    clock = Clock()
    script = Script([unavailable("NOT_LEADER")] * 100)
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_channel(script, clock).unary_unary(READ)(object(), timeout=3))
    assert clock.now <= 3 and sum(clock.pauses) <= 3 and 3 <= script.calls < 100

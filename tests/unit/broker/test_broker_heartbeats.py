"""The broker leader's missed-heartbeat loop (:mod:`drover.broker.heartbeats`):
it asks the state service, fenced with its term, only while the term is
provably alive; drains what one call left; ends the term on FENCE_LOST."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from drover.api.state.v1 import state_pb2
from drover.broker.heartbeats import reap_missed_heartbeats
from drover.coord import Fence
from drover.errors import FenceLost, Unavailable


class _Term:
    fence = Fence("/t/drover/v1/election/broker/x", 7)

    def __init__(self) -> None:
        self.lost: list[str] = []

    def report_lost(self, reason: str) -> None:
        self.lost.append(reason)


class _Api:
    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.fences: list[Fence] = []

    async def reap_missed_heartbeats(self, fence: Fence) -> Any:
        self.fences.append(fence)
        a = self.answers.pop(0) if self.answers else state_pb2.ReapMissedHeartbeatsResponse()
        if isinstance(a, Exception):
            raise a
        return a


async def _run(api: _Api, term: _Term, alive: Any, seconds: float) -> None:
    task = asyncio.create_task(reap_missed_heartbeats(api, term, alive, 0.01))  # type: ignore[arg-type]
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_it_asks_fenced_and_drains_what_a_call_left() -> None:
    api = _Api([state_pb2.ReapMissedHeartbeatsResponse(node_ids=["n1"], remaining=2),
                state_pb2.ReapMissedHeartbeatsResponse(node_ids=["n2", "n3"])])
    await _run(api, _Term(), lambda: True, 0.05)
    assert len(api.fences) >= 3 and set(api.fences) == {_Term.fence}
    assert not api.answers


async def test_nothing_is_asked_while_the_term_is_not_provably_alive() -> None:
    api = _Api([])
    await _run(api, _Term(), lambda: False, 0.05)
    assert api.fences == []


@pytest.mark.parametrize("error", [Unavailable("state down")])
async def test_a_failed_call_is_tried_again_later(error: Exception) -> None:
    api = _Api([error])
    await _run(api, _Term(), lambda: True, 0.05)
    assert len(api.fences) >= 2


async def test_fence_lost_ends_the_term() -> None:
    api = _Api([FenceLost("gone")])
    term = _Term()
    await _run(api, term, lambda: True, 0.05)
    assert len(api.fences) == 1 and term.lost

"""An ack whose write lands after the term changed is answered as written.

The outcome is durable (fenced with the term its token was issued under, and
that fence held when etcd applied it); only the settling of the core is left
to the stream. Before, the caller was told NOT_LEADER, or the ETCD_UNAVAILABLE
a leaderless NOT_LEADER became: a worker (and the linearizability history)
took a written ack for one that never happened.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from drover.api.broker.v1 import broker_pb2
from drover.api.types.v1.evaluation_pb2 import (
    EVALUATION_STATUS_COMPLETE,
    EVALUATION_STATUS_PENDING,
    Evaluation,
)
from drover.broker.ack_calls import AckCalls
from drover.broker.core.settlement import AckSettlement


class _Core:
    def __init__(self) -> None:
        self.settled: list[str] = []

    def check_outstanding(self, eval_id: str, token: str) -> Evaluation:
        return Evaluation(id=eval_id, status=EVALUATION_STATUS_PENDING, modify_index=7)

    def settle_ack(self, eval_id: str, token: str) -> list[Any]:
        self.settled.append(eval_id)
        return []


class _Writer:
    """Lands each write at index 42 once ``land`` is set."""

    def __init__(self) -> None:
        self.land = asyncio.Event()

    async def _landed(self, n: int) -> list[Any]:
        await self.land.wait()
        return [42] * n

    def enqueue(self, group: Any, fence: Any) -> asyncio.Future[int]:
        async def one() -> int:
            return (await self._landed(1))[0]
        return asyncio.ensure_future(one())

    def enqueue_all(self, writes: list[Any]) -> asyncio.Future[list[Any]]:
        return asyncio.ensure_future(self._landed(len(writes)))


@dataclass
class _Shell:
    writer: Any
    effects: list[Any] = field(default_factory=list)

    async def writer_for_call(self, wait: float = 0.0) -> Any:
        return self.writer

    def token_fence(self, token: str) -> None:
        return None

    def after(self, effects: list[Any]) -> None:
        self.effects.append(effects)


class _Guard:
    def not_leader(self) -> Exception:  # never asked for here any more
        raise AssertionError("a landed write was answered NOT_LEADER")

    async def refusal(self, err: Exception) -> Exception:
        raise AssertionError("a landed write was answered as refused")


def _ack(eval_id: str) -> broker_pb2.AckRequest:
    return broker_pb2.AckRequest(eval_id=eval_id, token=f"t-{eval_id}",
                                 status=EVALUATION_STATUS_COMPLETE)


def _calls() -> tuple[AckCalls, _Shell, _Writer, _Core]:
    writer, core = _Writer(), _Core()
    shell = _Shell(writer)
    return AckCalls(shell, core, AckSettlement(core), _Guard()), shell, writer, core  # type: ignore[arg-type]


async def test_an_ack_that_landed_after_the_term_changed_is_answered_written() -> None:
    calls, shell, writer, core = _calls()
    call = asyncio.ensure_future(calls.write_outcome(_ack("e1")))
    await asyncio.sleep(0)
    shell.writer = _Writer()  # the term ended (and maybe began again) meanwhile
    writer.land.set()
    assert await asyncio.wait_for(call, 5) == 42
    assert core.settled == []  # the stream settles it, in the term it lands in


async def test_an_ack_batch_that_landed_after_the_term_changed_is_answered_written() -> None:
    calls, shell, writer, core = _calls()
    call = asyncio.ensure_future(calls.write_outcomes([_ack("e1"), _ack("e2")]))
    await asyncio.sleep(0)
    shell.writer = _Writer()
    writer.land.set()
    assert await asyncio.wait_for(call, 5) == [42, 42]
    assert core.settled == []


async def test_an_ack_in_the_same_term_is_settled_at_once() -> None:
    calls, _shell, writer, core = _calls()
    writer.land.set()
    assert await asyncio.wait_for(calls.write_outcome(_ack("e1")), 5) == 42
    assert core.settled == ["e1"]

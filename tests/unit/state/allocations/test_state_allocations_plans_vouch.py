"""SubmitPlan's delivery check runs while the plan waits for the replica's
plan lock, and is made again when the wait outlived VOUCH_FRESH."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2
from drover.state.allocations import plans
from drover.state.allocations.plans import PlansRpc
from drover.state.errors import PlanDeliveryEnded
from drover.state.pipeline import Caller


class _Writes:
    """Holds the plan lock while ``release`` is unset."""

    max_objects = 1000

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.applied: list[Any] = []
        self.cache = SimpleNamespace(revision=1)

    def write_context(self) -> Any:
        return None

    def fence(self, context: Any) -> None:
        return None

    async def transact(self, planner: Any, fence: Any, **kw: Any) -> str:
        self.applied.append(planner)
        await self.release.wait()
        return "committed"


class _TokenCheck:
    def __init__(self, refuse: str = "") -> None:
        self.vouched: list[str] = []
        self.refuse = refuse

    async def vouch(self, eval_id: str, token: str) -> tuple[bytes, int]:
        self.vouched.append(eval_id)
        if eval_id == self.refuse:
            raise PlanDeliveryEnded(f"evaluation {eval_id!r} is not outstanding")
        return b"leader", 7

    async def still_leads(self, vouched: Any) -> bool:
        return True

    async def close(self) -> None:
        return None


def _plan(eval_id: str) -> state_pb2.SubmitPlanRequest:
    placement = allocation_pb2.Allocation(
        id=f"{eval_id}-a", namespace="default", job_id="web", task_group="g", name="web.g[0]",
        node_id="n1", desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    return state_pb2.SubmitPlanRequest(eval_id=eval_id, namespace="default", job_id="web",
                                       eval_token="t", placements=[placement],
                                       node_indexes={"n1": 1})


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_delivery_is_checked_while_the_plan_waits_for_the_lock() -> None:
    writes, token_check = _Writes(), _TokenCheck()
    rpc = PlansRpc(writes, token_check)  # type: ignore[arg-type]
    first = asyncio.create_task(rpc.submit(_plan("e1"), Caller()))
    await _settle()
    second = asyncio.create_task(rpc.submit(_plan("e2"), Caller()))
    await _settle()
    assert token_check.vouched == ["e1", "e2"] and len(writes.applied) == 1  # e2 waits
    writes.release.set()
    assert await first == await second == "committed"
    assert token_check.vouched == ["e1", "e2"]  # fresh: not checked again


async def test_a_plan_that_waited_too_long_is_checked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plans, "VOUCH_FRESH", 0.01)
    writes, token_check = _Writes(), _TokenCheck()
    rpc = PlansRpc(writes, token_check)  # type: ignore[arg-type]
    first = asyncio.create_task(rpc.submit(_plan("e1"), Caller()))
    second = asyncio.create_task(rpc.submit(_plan("e2"), Caller()))
    await asyncio.sleep(0.05)
    writes.release.set()
    await asyncio.gather(first, second)
    assert token_check.vouched == ["e1", "e2", "e2"]


async def test_a_delivery_refused_while_waiting_writes_nothing() -> None:
    writes, token_check = _Writes(), _TokenCheck(refuse="e2")
    rpc = PlansRpc(writes, token_check)  # type: ignore[arg-type]
    first = asyncio.create_task(rpc.submit(_plan("e1"), Caller()))
    await _settle()
    second = asyncio.create_task(rpc.submit(_plan("e2"), Caller()))
    await _settle()
    writes.release.set()
    assert await first == "committed"
    with pytest.raises(PlanDeliveryEnded):
        await second
    assert len(writes.applied) == 1

"""The writer sizes its txns to the state service's cap.

The broker is told etcd's ``--max-txn-ops`` (``--broker-max-txn-ops``) as
the state service is; a state replica told less refuses a bigger write
INVALID_ARGUMENT naming its cap (``max_objects``). The writer then takes
that cap and writes the refused batch again, cut to it, ahead of the rest:
no write is lost, reordered or written one by one, and a refusal that
names no smaller cap never loops."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.effects import WriteGroup
from drover.broker.writer import FencedWriter
from drover.coord.fence import Fence
from drover.errors import DroverError, InvalidArgument

FENCE = Fence("/drover/v1/election/broker/a", 7)


class CappedApi:
    """UpdateApi of a state replica that takes at most ``cap`` evaluations a call."""

    def __init__(self, cap: int, *, name_cap: bool = True) -> None:
        self.cap = cap
        self.name_cap = name_cap
        self.calls: list[list[str]] = []
        self.refused = 0
        self.index = 100

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int:
        ids = [e.id for e in (*updates, *creates)]
        await asyncio.sleep(0)
        if len(ids) > self.cap:
            self.refused += 1
            meta = {"field": "evaluations"}
            if self.name_cap:
                meta["max_objects"] = str(self.cap)
            raise InvalidArgument(f"evaluations writes {len(ids)} objects", metadata=meta)
        self.calls.append(ids)
        self.index += 1
        return self.index


def _group(*ids: str) -> WriteGroup:
    return WriteGroup(tuple(Evaluation(id=i, modify_index=3) for i in ids))


async def _run(api: CappedApi, max_objects: int,
               writes: list[WriteGroup]) -> list[int | DroverError]:
    writer = FencedWriter(api, FENCE, on_written=lambda g, i: None,
                          on_fence_lost=lambda why: None, max_objects=max_objects)
    run = asyncio.create_task(writer.run())
    try:
        async with asyncio.timeout(5):
            return await writer.enqueue_all([(g, None) for g in writes])
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


async def test_a_refusal_naming_a_smaller_cap_recuts_the_batch_to_it() -> None:
    api = CappedApi(cap=3)
    outcomes = await _run(api, 10, [_group(f"e{i}") for i in range(8)])
    # Refused once (8 > 3), then written in order in txns of at most 3.
    assert api.refused == 1
    assert api.calls == [["e0", "e1", "e2"], ["e3", "e4", "e5"], ["e6", "e7"]]
    assert all(isinstance(o, int) for o in outcomes)
    assert outcomes == [101, 101, 101, 102, 102, 102, 103, 103]


async def test_the_cap_learnt_holds_for_later_writes() -> None:
    api = CappedApi(cap=2)
    writer = FencedWriter(api, FENCE, on_written=lambda g, i: None,
                          on_fence_lost=lambda why: None, max_objects=10)
    run = asyncio.create_task(writer.run())
    try:
        async with asyncio.timeout(5):
            await writer.enqueue_all([(_group(f"a{i}"), None) for i in range(3)])
            await writer.enqueue_all([(_group(f"b{i}"), None) for i in range(3)])
        # A group over the learnt cap is now refused before it is queued.
        with pytest.raises(InvalidArgument, match="at most 2"):
            writer.enqueue_all([(_group("x", "y", "z"), None)])
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
    assert api.refused == 1
    assert all(len(ids) <= 2 for ids in api.calls)


async def test_a_refusal_without_a_smaller_cap_fails_each_write_alone_no_loop() -> None:
    # No cap named: the writer cannot know better; each group is tried on
    # its own, as for any refused batch, and the big one fails alone.
    api = CappedApi(cap=2, name_cap=False)
    outcomes = await _run(api, 10, [_group("a"), _group("b", "c", "d"), _group("e")])
    assert isinstance(outcomes[1], InvalidArgument)
    assert outcomes[0] != outcomes[2] and all(isinstance(o, int) for o in (outcomes[0],
                                                                          outcomes[2]))
    assert api.refused == 2  # the batch, then the big group alone


async def test_one_group_bigger_than_the_cap_fails_alone_after_one_recut() -> None:
    api = CappedApi(cap=2)
    outcomes = await _run(api, 10, [_group("a", "b", "c"), _group("d")])
    assert isinstance(outcomes[0], InvalidArgument)
    assert outcomes[1] == 101 and api.calls == [["d"]]
    # The batch (4 > 2) once, the big group alone once: then it is final.
    assert api.refused == 2

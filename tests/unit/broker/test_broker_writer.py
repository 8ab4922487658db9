"""The broker's fenced group-commit writer (drover.broker.writer).

Overlapped flushes, against a fake store whose every call the test releases
by hand (no timing): at most ``max_in_flight`` txns at once, never two in
flight for one evaluation (per-evaluation FIFO), and a fence lost in one
flight ends the term once while the other lands.

The cap: the broker is told etcd's ``--max-txn-ops``
(``--broker-max-txn-ops``) as the state service is; a state replica told
less refuses a bigger write INVALID_ARGUMENT naming its cap
(``max_objects``). The writer then takes that cap and writes the refused
batch again, cut to it, ahead of the rest: no write is lost, reordered or
written one by one, and a refusal that names no smaller cap never loops."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TypedDict, Unpack

import pytest

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.effects import WriteGroup
from drover.broker.errors import WriteOutcomeUnknown
from drover.broker.writer import FencedWriter
from drover.coord.fence import Fence
from drover.errors import (
    DroverError,
    EvaluationChanged,
    FailedPrecondition,
    FenceLost,
    InvalidArgument,
    NotLeader,
    Unavailable,
)

FENCE = Fence("/drover/v1/election/broker/a", 7)


class GatedApi:
    """UpdateApi whose calls wait until the test answers them, in any order."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], asyncio.Future[int]]] = []
        self.arrived = asyncio.Event()
        self.max_open = 0

    @property
    def open(self) -> list[tuple[list[str], asyncio.Future[int]]]:
        return [c for c in self.calls if not c[1].done()]

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int:
        reply: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.calls.append(([e.id for e in (*updates, *creates)], reply))
        self.max_open = max(self.max_open, len(self.open))
        self.arrived.set()
        return await reply

    async def until_open(self, n: int) -> None:
        async with asyncio.timeout(5):
            while len(self.open) < n:
                self.arrived.clear()
                await self.arrived.wait()


def _group(*ids: str) -> WriteGroup:
    return WriteGroup(tuple(Evaluation(id=i, modify_index=3) for i in ids))


async def _settle() -> None:
    for _ in range(20):  # let the writer's loop run what is runnable
        await asyncio.sleep(0)


@pytest.fixture
def lost() -> list[str]:
    return []


class _Options(TypedDict, total=False):
    """The writer's options a test sets (the rest are the writer's defaults)."""

    max_in_flight: int


async def _writer(api: GatedApi, lost: list[str], **kw: Unpack[_Options],
                  ) -> tuple[FencedWriter, asyncio.Task[None]]:
    writer = FencedWriter(api, FENCE, on_written=lambda g, i: None,
                          on_fence_lost=lost.append, max_objects=4, **kw)
    return writer, asyncio.create_task(writer.run())


async def test_two_batches_in_flight_never_three(lost: list[str]) -> None:
    api = GatedApi()
    writer, run = await _writer(api, lost)
    writes = [asyncio.create_task(writer.write(_group(f"e{i}"))) for i in range(12)]
    await api.until_open(2)
    await _settle()
    assert len(api.open) == 2 and [ids for ids, _ in api.calls] == [
        ["e0", "e1", "e2", "e3"], ["e4", "e5", "e6", "e7"]]
    api.calls[1][1].set_result(20)  # the second lands first: a slot frees
    await api.until_open(2)
    api.calls[0][1].set_result(10)
    api.calls[2][1].set_result(30)
    assert await asyncio.gather(*writes) == [10] * 4 + [20] * 4 + [30] * 4
    assert api.max_open == 2
    run.cancel()


async def test_one_evaluation_is_never_in_two_flights(lost: list[str]) -> None:
    api = GatedApi()
    writer, run = await _writer(api, lost)
    first = asyncio.create_task(writer.write(_group("a", "b")))
    await api.until_open(1)
    # "b" again, then "c": the second write of b waits for the first, and c,
    # queued behind it, waits too (FIFO), though a slot is free.
    again = asyncio.create_task(writer.write(_group("b")))
    later = asyncio.create_task(writer.write(_group("c")))
    await _settle()
    assert len(api.open) == 1
    api.calls[0][1].set_result(10)
    await api.until_open(1)
    assert api.calls[1][0] == ["b", "c"]
    api.calls[1][1].set_result(11)
    assert (await first, await again, await later) == (10, 11, 11)
    run.cancel()


async def test_fence_lost_in_one_flight_ends_the_term_once(lost: list[str]) -> None:
    api = GatedApi()
    writer, run = await _writer(api, lost)
    writes = [asyncio.create_task(writer.write(_group(f"e{i}"))) for i in range(10)]
    await api.until_open(2)
    api.calls[0][1].set_exception(FenceLost("the election key is gone"))
    await asyncio.wait_for(run, 5)  # the writer ends
    # The other flight was abandoned with the term: its callers learn the
    # outcome is unknown (it was sent: it may land yet), not NOT_LEADER (a
    # written ack told it was not); no second report. The refused flight's
    # and the queued writes' callers are told NOT_LEADER: nothing was written.
    assert api.calls[1][1].cancelled()
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    assert len(lost) == 1
    in_flight = set(api.calls[1][0])
    for i, o in enumerate(outcomes):
        want = WriteOutcomeUnknown if f"e{i}" in in_flight else NotLeader
        assert isinstance(o, want), (i, o)
    assert 0 < len(in_flight) < 10
    assert len(api.calls) == 2  # nothing queued was sent after the loss
    with pytest.raises(DroverError):
        await writer.write(_group("late"))


async def test_serial_when_asked(lost: list[str]) -> None:
    api = GatedApi()
    writer, run = await _writer(api, lost, max_in_flight=1)
    writes = [asyncio.create_task(writer.write(_group(f"e{i}"))) for i in range(8)]
    await api.until_open(1)
    await _settle()
    assert len(api.open) == 1
    api.calls[0][1].set_result(1)
    await api.until_open(1)
    api.calls[1][1].set_result(2)
    assert await asyncio.gather(*writes) == [1] * 4 + [2] * 4
    assert api.max_open == 1
    run.cancel()


class RefusingApi(GatedApi):
    """GatedApi that refuses at once any txn writing ``bad`` (as the state
    service refuses a changed evaluation)."""

    def __init__(self, bad: str) -> None:
        super().__init__()
        self.bad = bad

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int:
        if any(e.id == self.bad for e in (*updates, *creates)):
            self.calls.append(([e.id for e in (*updates, *creates)],
                               asyncio.get_running_loop().create_future()))
            self.calls[-1][1].set_result(0)
            raise FailedPrecondition("changed meanwhile")
        return await super().update(updates, creates, fence)


async def test_writes_queued_together_are_answered_each_on_its_own(lost: list[str]) -> None:
    api = RefusingApi(bad="e2")
    landed: list[tuple[list[str], int]] = []
    writer = FencedWriter(api, FENCE, on_fence_lost=lost.append, max_objects=4,
                          on_written=lambda gs, i: landed.append(
                              ([e.id for g in gs for e in g.evaluations], i)))
    run = asyncio.create_task(writer.run())
    other = Fence(FENCE.leader_key, 3)  # an older term's delivery: never shares a txn
    writes = [(_group(f"e{i}"), other if i == 5 else None) for i in range(7)]
    done = writer.enqueue_all(writes)
    await api.until_open(1)
    await _settle()
    # e0..e3 are refused as one txn (for e2), then retried one by one, while
    # the other slot writes e4, then e5 (its own fence: alone), then e6.
    while api.open:
        api.open[0][1].set_result(len(api.calls))
        await _settle()
    outcomes = await asyncio.wait_for(done, 5)
    assert isinstance(outcomes[2], FailedPrecondition)
    assert all(isinstance(o, int) and o > 0 for i, o in enumerate(outcomes) if i != 2)
    # One hook call per landed txn, with every group it wrote; e5 (its own
    # fence) was never in a txn with another write.
    assert sorted(i for ids, _ in landed for i in ids) == ["e0", "e1", "e3", "e4", "e5", "e6"]
    assert ["e5"] in [ids for ids, _ in api.calls]
    assert all(outcomes[int(i[1:])] == index for ids, index in landed for i in ids)
    assert not lost
    run.cancel()


class LostReplyApi(GatedApi):
    """A store that applies every txn, compared on modify_index as the
    state service does, and loses the replies of the calls numbered in
    ``lose`` (from 1): a second attempt of a write that landed is refused
    EVALUATION_CHANGED."""

    def __init__(self, lose: set[int]) -> None:
        super().__init__()
        self.lose = lose
        self.applied: dict[str, int] = {}

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int:
        self.calls.append(([e.id for e in (*updates, *creates)],
                           asyncio.get_running_loop().create_future()))
        self.calls[-1][1].set_result(0)
        self.arrived.set()
        if any(self.applied.get(e.id, e.modify_index) != e.modify_index for e in updates):
            raise EvaluationChanged("changed meanwhile")
        index = len(self.calls) + 10
        self.applied.update((e.id, index) for e in updates)
        if len(self.calls) in self.lose:
            raise Unavailable("UNAVAILABLE: the state replica went away before it answered")
        return index


async def test_a_batch_whose_reply_was_lost_is_not_written_again_for_its_callers(
        lost: list[str]) -> None:
    """The txn of an Ack landed and its reply was lost: its caller is told
    the outcome is unknown (OUTCOME_UNKNOWN). Written again alone, the write would be refused
    EVALUATION_CHANGED (its own first attempt changed the evaluation), and
    the worker told "not written" of an outcome that is durable (the soak's
    one evaluation read COMPLETE with no ack in its history)."""
    api = LostReplyApi(lose={1, 2})
    writer, run = await _writer(api, lost)
    done = writer.enqueue_all([(_group("a"), None), (_group("b"), None)])
    outcomes = await asyncio.wait_for(done, 5)
    assert [type(o) for o in outcomes] == [WriteOutcomeUnknown] * 2, outcomes
    assert [ids for ids, _ in api.calls] == [["a", "b"]]
    # An effect (no caller) in a batch whose reply is lost is retried; its
    # second attempt finds it landed and is dropped: nothing more is sent.
    writer.submit([_group("c")])
    async with asyncio.timeout(5):
        while len(api.calls) < 3:
            api.arrived.clear()
            await api.arrived.wait()
    await asyncio.sleep(0.6)  # past the retry backoff: nothing else is sent
    assert [ids for ids, _ in api.calls] == [["a", "b"], ["c"], ["c"]]
    assert not lost
    run.cancel()


async def test_queued_writes_learn_a_closed_writer_at_once(lost: list[str]) -> None:
    api = GatedApi()
    writer, run = await _writer(api, lost)
    done = writer.enqueue_all([(_group("a"), None), (_group("b", "c"), None)])
    await api.until_open(1)
    writer.close(NotLeader("broker", None))
    outcomes = await asyncio.wait_for(done, 5)
    # Sent in one flight when the term ended: they may land yet.
    assert all(isinstance(o, WriteOutcomeUnknown) for o in outcomes)
    with pytest.raises(NotLeader):
        writer.enqueue_all([(_group("d"), None)])
    # Too big a group refuses the whole call before anything is queued.
    fresh, run2 = await _writer(GatedApi(), lost)
    with pytest.raises(InvalidArgument):
        fresh.enqueue_all([(_group("x"), None), (_group("a", "b", "c", "d", "e"), None)])
    assert (await asyncio.wait_for(fresh.enqueue_all([]), 1)) == []
    run.cancel()
    run2.cancel()


# -- the cap ---------------------------------------------------------------


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

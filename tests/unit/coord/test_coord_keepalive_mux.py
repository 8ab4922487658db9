"""KeepAliveMux: one-shot lease keepalives on one shared stream, driven with
a fake stream (the real one: tests/integration/coord/test_coord_keepalive_etcd.py)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator

import pytest

from drover.coord.errors import ClientClosed, EtcdUnavailable
from drover.coord.keepalive_mux import KeepAliveMux
from drover.coord.kv import LeaseNotFound


class FakeStream:
    """Requests recorded; replies, failures and the end played by the test."""

    def __init__(self, suspect_after: float = math.inf) -> None:
        self.suspect_after = suspect_after
        self.sent: list[int] = []
        self.suspected = 0
        self.cancelled = False
        self._replies: asyncio.Queue[tuple[int, int] | Exception | None] = asyncio.Queue()

    def send(self, lease: int) -> None:
        if self.cancelled:
            raise EtcdUnavailable("fake stream cancelled")
        self.sent.append(lease)

    async def recv(self) -> tuple[int, int] | None:
        item = await self._replies.get()
        if isinstance(item, Exception):
            raise item
        return item

    def suspect(self) -> None:
        self.suspected += 1

    def cancel(self) -> None:
        self.cancelled = True
        self._replies.put_nowait(None)

    # the test's side
    def reply(self, lease: int, ttl: int) -> None:
        self._replies.put_nowait((lease, ttl))

    def fail(self, err: Exception) -> None:
        self._replies.put_nowait(err)

    def end(self) -> None:
        self._replies.put_nowait(None)


class Opener:
    def __init__(self, suspect_after: float = math.inf) -> None:
        self.streams: list[FakeStream] = []
        self.suspect_after = suspect_after

    def __call__(self) -> FakeStream:
        s = FakeStream(self.suspect_after)
        self.streams.append(s)
        return s

    @property
    def last(self) -> FakeStream:
        return self.streams[-1]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def sent(opener: Opener, n: int, streams: int = 1) -> FakeStream:
    """The ``streams``-th stream, once ``n`` requests are on it."""
    def ready() -> bool:
        return len(opener.streams) >= streams and len(opener.last.sent) >= n

    async with asyncio.timeout(2):
        for _ in iter(ready, True):
            await asyncio.sleep(0)
    return opener.last


@pytest.fixture
async def mux() -> AsyncIterator[tuple[KeepAliveMux, Opener]]:
    opener = Opener()
    m = KeepAliveMux(opener, timeout=5.0)
    yield m, opener
    await m.close()


async def test_replies_reach_their_waiters_by_lease_id(mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    calls = [asyncio.create_task(m.keepalive(lease)) for lease in (1, 2, 3)]
    await sent(opener, 3)
    assert m.opened == 1 and opener.last.sent == [1, 2, 3]  # one stream for all
    for lease, ttl in [(3, 30), (1, 10), (2, 20)]:  # matched by ID, not by order
        opener.last.reply(lease, ttl)
    assert await asyncio.gather(*calls) == [10, 20, 30]
    assert m.waiting == 0


async def test_callers_of_one_lease_each_get_the_reply_to_their_own_request(
        mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    a = asyncio.create_task(m.keepalive(7))
    b = asyncio.create_task(m.keepalive(7))
    await sent(opener, 2)
    opener.last.reply(7, 11)
    assert await a == 11
    await settle()
    assert not b.done()
    opener.last.reply(7, 12)
    assert await b == 12


async def test_ttl_zero_is_lease_not_found_for_that_caller_only(
        mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    gone = asyncio.create_task(m.keepalive(0x5))
    kept = asyncio.create_task(m.keepalive(0x6))
    await sent(opener, 2)
    opener.last.reply(0x5, 0)
    opener.last.reply(0x6, 9)
    with pytest.raises(LeaseNotFound) as info:
        await gone
    assert info.value.lease == 0x5
    assert await kept == 9
    assert m.opened == 1  # the stream goes on


async def test_a_timeout_raises_unavailable_and_removes_the_waiter(
        mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    with pytest.raises(EtcdUnavailable, match="did not answer"):
        await m.keepalive(1, within=0.05)
    assert m.waiting == 0
    # a shorter caller deadline is no fault of the stream's: it stays
    opener.last.reply(1, 10)  # the late reply answers no one
    call = asyncio.create_task(m.keepalive(1))
    await sent(opener, 2)
    opener.last.reply(1, 10)
    assert await call == 10
    assert m.opened == 1 and opener.last.suspected == 0


async def test_a_stream_silent_for_a_whole_own_bound_is_suspected_and_replaced() -> None:
    opener = Opener()
    m = KeepAliveMux(opener, timeout=0.05)
    try:
        other = asyncio.create_task(m.keepalive(2, within=5.0))
        with pytest.raises(EtcdUnavailable, match="did not answer"):
            await m.keepalive(1)
        stuck = opener.last
        assert stuck.suspected == 1 and stuck.cancelled
        with pytest.raises(EtcdUnavailable, match="gave no reply"):
            await other  # retired with the stream
        call = asyncio.create_task(m.keepalive(1))
        await sent(opener, 1, streams=2)
        assert m.opened == 2 and opener.last is not stuck
        opener.last.reply(1, 10)
        assert await call == 10
    finally:
        await m.close()


async def test_a_slow_reply_has_the_member_probed_and_still_arrives() -> None:
    opener = Opener(suspect_after=0.02)
    m = KeepAliveMux(opener, timeout=5.0)
    try:
        call = asyncio.create_task(m.keepalive(1))
        await asyncio.sleep(0.1)
        assert opener.last.suspected == 1 and not call.done()
        opener.last.reply(1, 10)
        assert await call == 10
    finally:
        await m.close()


@pytest.mark.parametrize("how", ["fail", "end"])
async def test_a_failed_or_ended_stream_fails_every_waiter_and_the_next_call_reopens(
        mux: tuple[KeepAliveMux, Opener], how: str) -> None:
    m, opener = mux
    calls = [asyncio.create_task(m.keepalive(lease)) for lease in (1, 2, 2, 3)]
    await sent(opener, 4)
    first = opener.last
    if how == "fail":
        first.fail(EtcdUnavailable("etcd: UNAVAILABLE: no leader"))
    else:
        first.end()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, EtcdUnavailable) and not isinstance(r, ClientClosed)
               for r in results), results
    assert m.waiting == 0 and first.cancelled
    assert m.opened == 1  # lazily: nothing reopens until a call needs it
    call = asyncio.create_task(m.keepalive(1))
    await sent(opener, 1, streams=2)
    assert m.opened == 2 and opener.last is not first
    opener.last.reply(1, 10)
    assert await call == 10


async def test_a_send_on_a_dead_stream_fails_and_the_next_call_reopens(
        mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    waiting = asyncio.create_task(m.keepalive(1))
    await sent(opener, 1)
    opener.last.cancelled = True  # gone under us, its reader not told yet
    with pytest.raises(EtcdUnavailable):
        await m.keepalive(2)
    with pytest.raises(EtcdUnavailable):
        await waiting
    call = asyncio.create_task(m.keepalive(2))
    await sent(opener, 1, streams=2)
    opener.last.reply(2, 5)
    assert await call == 5 and m.opened == 2


async def test_a_cancelled_caller_leaves_no_waiter(mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    call = asyncio.create_task(m.keepalive(1))
    await sent(opener, 1)
    assert m.waiting == 1
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert m.waiting == 0
    opener.last.reply(1, 10)  # answers no one
    later = asyncio.create_task(m.keepalive(1))
    await sent(opener, 2)
    opener.last.reply(1, 11)
    assert await later == 11


async def test_close_fails_the_waiters_and_every_later_call() -> None:
    opener = Opener()
    m = KeepAliveMux(opener, timeout=5.0)
    calls = [asyncio.create_task(m.keepalive(lease)) for lease in (1, 2)]
    await sent(opener, 2)
    reader = m._current.reader if m._current is not None else None
    await m.close()
    for c in calls:
        with pytest.raises(ClientClosed):
            await c
    assert opener.last.cancelled and reader is not None and reader.done()
    with pytest.raises(ClientClosed):
        await m.keepalive(1)
    assert m.opened == 1
    await m.close()  # idempotent


async def test_a_passed_caller_deadline_sends_nothing(mux: tuple[KeepAliveMux, Opener]) -> None:
    m, opener = mux
    with pytest.raises(EtcdUnavailable, match="deadline"):
        await m.keepalive(1, within=0.0)
    assert not opener.streams

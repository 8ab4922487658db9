"""Nothing in coord hangs a stop: a session's close, a membership entry's
close, a leadership's resign and a watch's close each end within their
bound when a task they cancel does not end (a seam that swallows its cancel
once, or every time: :mod:`stubborn`). Each test fails on the old shape
``task.cancel(); with suppress(CancelledError): await task``: the stop
never returns (seen through :func:`stubborn.ends_within`, which never
cancels it), or the leadership task never ends.

Runs on :class:`MemoryKV` and the virtual clock; the stops' bounds are real
seconds (0.2 here); :data:`HANG` is only how long a test looks before it
calls a stop hung."""

from __future__ import annotations

import asyncio
import logging

import pytest
from stubborn import Stubborn, StubbornKV, ends_within, settle
from virtual_clock import VirtualClock

from drover.coord.election import Election
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.coord.leadership import Leadership, LeadershipConfig
from drover.coord.membership import Member, Registration, list_members
from drover.coord.session import Session
from drover.coord.watch import ResilientWatch, WatchConfig

KS = Keyspace("/stops/drover")
HANG = 10.0  # a stop bounded at 0.2 s not done by then is hung
STOP = 0.2
SWALLOW = pytest.mark.parametrize("swallow", [1, None], ids=["swallows-once", "ignores-all"])


def _left(caplog: pytest.LogCaptureFixture, what: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "drover.tasks" and r.getMessage().startswith(what)]


@SWALLOW
async def test_session_close_is_bounded_when_its_keepalive_stream_ignores_cancel(
        clock: VirtualClock, swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    kv = StubbornKV(clock)
    kv.keepalive_stubborn = stubborn = Stubborn(swallow)
    before = asyncio.all_tasks()
    session = await Session.open(kv, 60, clock=clock)
    await kv.txn([], [Put(b"/k", b"v", lease=session.lease_id)])
    async with asyncio.timeout(HANG):
        await kv.reading.wait()  # the keepalive stream is being read
    with caplog.at_level(logging.WARNING, logger="drover.tasks"):
        closing = await ends_within(session.close(grace=STOP), HANG)
    try:
        assert closing.done(), "session close hung on its keepalive reader"
        closing.result()
        # Two cancels may reach the reader (close's, and the keepalive task's
        # as it ends): one that swallows only the first then ends in time.
        assert stubborn.swallowed >= 1
        if swallow is None:
            (msg,) = _left(caplog, f"session {session.lease_hex} close")
            assert f"task lease-{session.lease_hex}-reader did not end within 0.2s" in msg
            assert "session.py" in msg and "in _read" in msg  # where it is stuck
        # the lease is revoked all the same: its key is gone
        assert (await kv.range(b"/k", b"")).kvs == []
    finally:
        stubborn.free()
        await settle(closing, *_since(before))


@SWALLOW
async def test_membership_close_is_bounded_when_its_task_ignores_cancel(
        clock: VirtualClock, swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    kv = StubbornKV(clock)
    kv.txn_stubborn = stubborn = Stubborn(swallow)  # the first put of the entry
    reg = Registration(kv, KS, Member("svc", "r1", "127.0.0.1:1", 1), ttl=60)
    task = reg.start()
    async with asyncio.timeout(HANG):
        await stubborn.entered.wait()
    with caplog.at_level(logging.WARNING, logger="drover.tasks"):
        closing = await ends_within(reg.close(grace=STOP), HANG)
    try:
        assert closing.done(), "membership close hung on its task"
        closing.result()
        assert stubborn.swallowed == 1 and not task.done()
        (msg,) = _left(caplog, "membership r1 close")
        assert "task membership-r1 did not end" in msg
        # the session was revoked: nothing of ours stays registered
        assert (await list_members(kv, KS, "svc")).members == ()
    finally:
        stubborn.free()
        await settle(closing, task)


@SWALLOW
async def test_resign_ends_the_leadership_task_when_the_campaign_ignores_cancel(
        clock: VirtualClock, swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    kv = StubbornKV(clock)
    kv.txn_stubborn = stubborn = Stubborn(swallow)  # the campaign's key put
    before = asyncio.all_tasks()
    lead = Leadership(kv, KS, "svc", "a:1", clock=clock,
                      config=LeadershipConfig(ttl=60, revoke_timeout=STOP, etcd_timeout=STOP))
    task = lead.start()
    async with asyncio.timeout(HANG):
        await stubborn.entered.wait()
    try:
        with caplog.at_level(logging.WARNING, logger="drover.tasks"):
            # resign waits up to its grace for the task: here, until it ends
            resigning = await ends_within(lead.resign(grace=HANG), 2 * HANG)
        assert resigning.done()
        assert task.done(), "the leadership task hung on a campaign that ignored its cancel"
        task.result()
        assert stubborn.swallowed == 1 and not lead.is_leader
        (msg,) = _left(caplog, "svc campaign stop")
        assert "did not end within 0.2s" in msg
    finally:
        stubborn.free()
        await settle(task, *_since(before))


@SWALLOW
async def test_watch_close_is_bounded_when_its_stream_ignores_cancel(
        clock: VirtualClock, swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    kv = StubbornKV(clock)
    await kv.txn([], [Put(b"/w/a", b"1")])
    kv.watch_stubborn = stubborn = Stubborn(swallow)
    watch = await ResilientWatch(kv, b"/w/", config=WatchConfig(stop_timeout=STOP),
                                 clock=clock).start()
    async with asyncio.timeout(HANG):
        await kv.reading.wait()
    tasks = list(watch._tasks)
    with caplog.at_level(logging.WARNING, logger="drover.tasks"):
        closing = await ends_within(watch.close(), HANG)
    try:
        assert closing.done(), "watch close hung on its reader"
        closing.result()
        assert stubborn.swallowed == 1
        (msg,) = _left(caplog, "watch b'/w/' close")
        assert "task watch-reader did not end" in msg
    finally:
        stubborn.free()
        await settle(closing, *tasks)


def _since(before: set[asyncio.Task[object]]) -> set[asyncio.Task[object]]:
    """Tasks started since ``before`` (what a stop left behind), to settle."""
    return asyncio.all_tasks() - before - {asyncio.current_task()}  # type: ignore[operator]


@SWALLOW
async def test_a_campaign_waiting_on_a_stubborn_watch_ends_on_its_cancel(
        clock: VirtualClock, swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    kv = StubbornKV(clock)
    first = await Session.open(kv, 60, clock=clock)
    second = await Session.open(kv, 60, clock=clock)
    assert (await Election(kv, KS, "svc", first, address="a:1").campaign()).address == "a:1"
    kv.watch_stubborn = stubborn = Stubborn(swallow)
    before = asyncio.all_tasks()
    campaign = asyncio.ensure_future(
        Election(kv, KS, "svc", second, address="b:1", timeout=STOP).campaign())
    async with asyncio.timeout(HANG):
        await kv.reading.wait()  # b waits, on a watch, for a's key to go
    try:
        with caplog.at_level(logging.WARNING, logger="drover.tasks"):
            campaign.cancel()
            await asyncio.wait({campaign}, timeout=HANG)
        assert campaign.cancelled(), "a cancelled campaign hung on its watch"
        assert stubborn.swallowed == 1
        (msg,) = _left(caplog, f"election watch for {KS.election_prefix('svc')}")
        assert "did not end within 0.2s" in msg
    finally:
        stubborn.free()
        await settle(campaign, *_since(before))
        for session in (first, second):
            await session.close(grace=STOP)

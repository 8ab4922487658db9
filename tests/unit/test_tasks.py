"""Stopping background tasks is bounded, also when one ignores its cancel."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

import pytest
from stubborn import Stubborn, settle

from drover.tasks import cancel_and_wait, run, stuck_at


async def test_tasks_that_end_on_cancel_are_awaited() -> None:
    ended = asyncio.Event()

    async def polite() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            ended.set()

    task = asyncio.create_task(polite())
    await asyncio.sleep(0)
    assert await cancel_and_wait([task], within=5.0) == set()
    assert task.cancelled() and ended.is_set()


async def test_a_task_that_ignores_its_cancel_is_left_after_the_bound() -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(60)

    task = asyncio.create_task(stubborn(), name="stubborn")
    done = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0)
    stuck = await cancel_and_wait([task, done], within=0.2)
    assert stuck == {task} and not task.done()
    release.set()
    task.cancel()
    await asyncio.wait({task}, timeout=5.0)
    assert task.done()


@pytest.mark.parametrize("swallow", [1, None], ids=["swallows-once", "ignores-all"])
async def test_a_stubborn_task_is_logged_with_where_it_is_stuck(
        swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    stubborn = Stubborn(swallow)

    async def stuck_in_a_seam() -> None:
        await stubborn.hold()

    task = asyncio.create_task(stuck_in_a_seam(), name="seam-reader")
    await asyncio.sleep(0)
    try:
        with caplog.at_level(logging.WARNING, logger="drover.tasks"):
            assert await cancel_and_wait([task], within=0.05, what="thing close") == {task}
        assert stubborn.swallowed == 1 and not task.done()
        (record,) = [r for r in caplog.records if r.name == "drover.tasks"]
        msg = record.getMessage()
        assert msg.startswith("thing close: task seam-reader did not end within 0.1s")
        assert "stubborn.py:" in msg and "in hold" in msg  # the innermost frame
    finally:
        stubborn.free()
        await settle(task)
    assert task.done()


async def test_the_callers_own_cancel_is_not_swallowed() -> None:
    # The old shape (`task.cancel(); with suppress(CancelledError): await task`)
    # swallowed the cancel of the stop itself; the stop then went on.
    stubborn = Stubborn(None)
    inner = asyncio.create_task(stubborn.hold())
    await asyncio.sleep(0)
    stop = asyncio.create_task(cancel_and_wait([inner], within=60.0))
    await asyncio.sleep(0.01)
    stop.cancel()
    try:
        await asyncio.wait({stop}, timeout=5.0)
        assert stop.cancelled()
    finally:
        stubborn.free()
        await settle(inner, stop)


def test_stuck_at_names_the_innermost_coroutine() -> None:
    async def inner() -> None:
        await asyncio.sleep(60)

    async def outer() -> None:
        await inner()

    async def main() -> str:
        task = asyncio.create_task(outer())
        await asyncio.sleep(0)
        where = stuck_at(task)
        task.cancel()
        return where

    loop = asyncio.new_event_loop()
    try:
        where = loop.run_until_complete(main())
    finally:
        loop.close()
    # inner's frame (asyncio.sleep's own, below it, says nothing of whose)
    assert where.endswith("in inner") and "test_tasks.py:" in where


def _in_a_thread(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """``target`` in a daemon thread of its own (its own event loop, away from
    the session's); joined for up to 10 s. A hung one is left (daemon)."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(target()), daemon=True)
    thread.start()
    thread.join(10.0)
    return thread, out


@pytest.mark.parametrize("swallow", [1, None], ids=["swallows-once", "ignores-all"])
def test_run_ends_bounded_when_main_leaves_a_stubborn_task(
        swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    # asyncio.run here never returns: it gathers the leftover task unbounded.
    freed = threading.Event()

    async def stubborn() -> None:
        swallowed = 0
        while not freed.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                swallowed += 1
                if swallow is not None and swallowed > swallow:
                    raise

    async def main() -> str:
        asyncio.get_running_loop().create_task(stubborn(), name="left-by-main")
        await asyncio.sleep(0)
        return "done"

    try:
        with caplog.at_level(logging.WARNING, logger="drover.tasks"):
            thread, out = _in_a_thread(lambda: run(main(), stop_timeout=0.2, what="svc exit"))
        assert not thread.is_alive(), "run hung on a task main left behind"
        assert out == ["done"]
        (msg,) = [r.getMessage() for r in caplog.records if r.name == "drover.tasks"]
        assert msg.startswith("svc exit: task left-by-main did not end within 0.2s"), msg
    finally:
        freed.set()

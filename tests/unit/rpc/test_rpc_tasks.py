"""Stopping background tasks is bounded, also when one ignores its cancel."""

from __future__ import annotations

import asyncio
import contextlib

from drover.rpc.tasks import cancel_and_wait


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

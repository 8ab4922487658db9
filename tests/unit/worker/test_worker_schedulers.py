"""Worker.run: ``num_schedulers`` scheduling loops side by side over one view."""

from __future__ import annotations

import asyncio

import grpc

from drover.worker.loop import Worker, WorkerConfig, default_num_schedulers


class _View:
    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ready.set()

    async def run(self) -> None:
        await asyncio.Event().wait()


async def _most_at_once(num: int) -> int:
    worker = Worker(grpc.aio.insecure_channel("127.0.0.1:1"), WorkerConfig(num_schedulers=num))
    worker.view = _View()  # type: ignore[assignment]
    now = most = 0
    steps = 0
    enough = asyncio.Event()

    async def step() -> int:
        nonlocal now, most, steps
        now += 1
        most = max(most, now)
        steps += 1
        if steps >= 4 * num:
            enough.set()
        await asyncio.sleep(0.01)  # a Dequeue and its plans
        now -= 1
        return 1

    worker.step = step  # type: ignore[method-assign]
    run = asyncio.create_task(worker.run())
    await asyncio.wait_for(enough.wait(), 10)
    run.cancel()
    try:
        await run
    except asyncio.CancelledError:
        pass
    return most


async def test_each_scheduler_dequeues_on_its_own() -> None:
    assert await _most_at_once(3) == 3


async def test_one_scheduler_is_one_loop() -> None:
    assert await _most_at_once(1) == 1


def test_the_default_is_one_per_core() -> None:
    assert WorkerConfig().num_schedulers == default_num_schedulers() >= 1

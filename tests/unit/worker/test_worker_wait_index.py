"""An evaluation is planned only on a view that reached its wait index
(Nomad's snapshotMinIndex): a view still behind after ``snapshot_wait`` gives
the evaluation back (ViewBehind: the loop nacks it) before anything is read
or submitted; a view that catches up in time lets it go on."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from drover.api.types.v1 import evaluation_pb2
from drover.worker.errors import ViewBehind
from drover.worker.loop import Worker, WorkerConfig

EV = evaluation_pb2.Evaluation(id="e1", namespace="default", type="system", job_id="sys")


class _Reads(Exception):
    """The worker went on to read the job: it did not wait."""


def _worker(wait: float) -> Worker:
    worker = Worker(grpc.aio.insecure_channel("127.0.0.1:1"), WorkerConfig(snapshot_wait=wait))

    async def read_job(ev: evaluation_pb2.Evaluation) -> None:
        raise _Reads

    worker.read_job = read_job  # type: ignore[assignment, method-assign]
    return worker


async def test_a_view_behind_the_wait_index_gives_the_evaluation_back() -> None:
    worker = _worker(0.2)
    worker.view.index = 41
    with pytest.raises(ViewBehind, match="at index 41, the evaluation needs 42"):
        await worker.process(EV, wait_index=42)


async def test_a_view_that_catches_up_in_time_goes_on_to_plan() -> None:
    worker = _worker(0.5)
    worker.view.index = 41

    async def catch_up() -> None:
        await asyncio.sleep(0.1)
        worker.view.index = 42

    task = asyncio.create_task(catch_up())
    with pytest.raises(_Reads):
        await worker.process(EV, wait_index=42)
    await task

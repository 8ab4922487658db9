"""Count-only progress waits for the progress window; everything else goes at once.

A wave of health reports moves a deployment's healthy count with every
stream response. Those writes (counts only) wait up to the progress window
and leave merged; the write that ends the deployment does not wait, and takes
the held counts along.
"""

from __future__ import annotations

import asyncio
import time

from deployments_harness import LEADER_CONFIG, Scheduler, StateReplica, service_job, start_watcher
from polling import eventually

from drover.api.deployments.v1 import deployments_pb2
from drover.api.types.v1 import deployment_pb2
from drover.deployments.config import BatcherConfig, LeaderConfig

SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
WINDOW = 2.0


async def _writes(stub: object) -> int:
    stats = await stub.GetWatcherStats(  # type: ignore[attr-defined]
        deployments_pb2.GetWatcherStatsRequest())
    return int(stats.state_writes)


async def test_a_health_wave_is_written_once_per_window_and_success_at_once(
        etcd_endpoint: str, etcd_prefix: str, state: StateReplica,
        scheduler: Scheduler) -> None:
    config = LeaderConfig(batcher=BatcherConfig(window=0.05, progress_window=WINDOW),
                          restore_timeout=LEADER_CONFIG.restore_timeout,
                          max_sleep=LEADER_CONFIG.max_sleep)
    w = await start_watcher(etcd_endpoint, etcd_prefix, state.address, config)
    try:
        await eventually(lambda: w.app.leader is not None and w.app.leader.leading)
        reg = await scheduler.register(service_job("wave", count=6, max_parallel=6))
        d = await scheduler.deployment(reg.deployment_id)
        allocs = await scheduler.place(d, 6)
        # The placed count and the first deadline (armed from the placements'
        # create time, so any leader re-derives it) wait the window too.
        await asyncio.sleep(WINDOW / 4)
        assert (await scheduler.deployment(d.id)).task_groups["web"].placed_allocs == 0
        await scheduler.wait_deployment(
            d.id, lambda x: (x.task_groups["web"].placed_allocs == 6
                             and x.task_groups["web"].HasField("require_progress_by")),
            within=2 * WINDOW)
        before = await _writes(w.stub)
        for alloc_id in allocs[:5]:  # five stream responses, each a new count
            await scheduler.health([alloc_id])
            await asyncio.sleep(0.05)
        await asyncio.sleep(WINDOW / 4)
        held = await scheduler.deployment(d.id)
        assert held.task_groups["web"].healthy_allocs == 0, "counts left before the window"
        stored = await scheduler.wait_deployment(
            d.id, lambda x: x.task_groups["web"].healthy_allocs == 5, within=2 * WINDOW)
        assert stored.status != SUCCESSFUL
        assert await _writes(w.stub) - before == 1  # five count changes, one write
        t0 = time.monotonic()
        await scheduler.health([allocs[5]])
        done = await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL,
                                               within=WINDOW)
        assert time.monotonic() - t0 < WINDOW / 2, "the deployment's end waited the window"
        assert done.task_groups["web"].healthy_allocs == 6
    finally:
        await w.close()

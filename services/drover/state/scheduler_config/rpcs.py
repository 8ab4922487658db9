"""SetSchedulerConfig (reads: GetSchedulerConfig, :mod:`drover.state.queries`):
planned by :mod:`.core.config`, run through the write pipeline on a synced
view."""

from __future__ import annotations

from typing import Any

from drover.state.pipeline import Caller, WriteCalls
from drover.state.scheduler_config.core.config import plan_scheduler_config


class SchedulerConfigRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    async def set(self, request: Any, caller: Caller) -> Any:
        cas = request.cas_index if request.HasField("cas_index") else None
        return await self.writes.write(
            lambda view, ctx: plan_scheduler_config(view, ctx, request.config, cas),
            caller, sync_first=True)

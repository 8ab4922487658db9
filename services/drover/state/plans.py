"""SubmitPlan: Nomad's plan applier (the planner and its rules are
:mod:`drover.state.core.placement`).

Plans are applied one at a time per replica (a lock), on a synced view, so
two plans on one replica never both take the last room on a node; across
replicas the txn's compares cover the job and node objects, and capacity
races between two replicas planning different jobs onto one node in the
same instant are not excluded. A conflict is PLAN_STALE (never retried
here: the worker plans again on what it re-reads).
"""

from __future__ import annotations

import asyncio
from typing import Any

from drover.state.core.placement import plan_submit
from drover.state.core.rules import within_cap
from drover.state.core.validate import check_name, namespace_arg, validated_plan
from drover.state.write_calls import WriteCalls


class PlansRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes
        self._plan_lock: asyncio.Lock | None = None

    def _lock(self) -> asyncio.Lock:
        if self._plan_lock is None:
            self._plan_lock = asyncio.Lock()
        return self._plan_lock

    async def SubmitPlan(self, request: Any, context: Any) -> Any:
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.job_id, "job_id")
        placements, updates, evs = validated_plan(request, ns)
        within_cap(len(placements) + len(updates) + len(evs), "plan", self.writes.max_objects)
        ctx = self.writes.write_context()
        async with self._lock():
            return await self.writes.transact(
                lambda view: plan_submit(view, ctx, request, ns, placements, updates, evs),
                self.writes.fence(context), sync_first=True)

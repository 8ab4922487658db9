"""UpdateNodeDrain and UpdateAllocDesiredTransition (the planners and what
they write: :mod:`drover.state.nodes.core.drain`).

Starting or cancelling a drain is an operator's write (node capability);
completing one and marking allocations to migrate are the node drainer's,
the deployment watcher leader's: they require its fence, so a deposed
drainer cannot move allocations or end a drain.
"""

from __future__ import annotations

from typing import Any

from drover.errors import InvalidArgument
from drover.state.core.rules import within_cap
from drover.state.core.validate import check_name, validate_eval
from drover.state.nodes.core.drain import plan_alloc_transitions, plan_update_node_drain
from drover.state.pipeline import Caller, WriteCalls


class NodeDrainRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    async def update_drain(self, request: Any, caller: Caller) -> Any:
        check_name(request.id, "id")
        fence = (self.writes.require_fence(caller, "a drain's completion") if request.complete
                 else self.writes.fence(caller))
        ctx = self.writes.write_context()
        return await self.writes.transact(lambda view: plan_update_node_drain(view, ctx, request),
                                          fence, sync_first=True)

    async def update_desired_transitions(self, request: Any, caller: Caller) -> Any:
        if not request.allocations:
            raise InvalidArgument("allocations must not be empty",
                                  metadata={"field": "allocations"})
        within_cap(len(request.allocations) + len(request.evaluations), "allocations",
                   self.writes.max_objects)
        fence = self.writes.require_fence(caller, "UpdateAllocDesiredTransition")
        for i, t in enumerate(request.allocations):
            check_name(t.id, f"allocations[{i}].id")
        for i, ev in enumerate(request.evaluations):
            validate_eval(f"evaluations[{i}]", ev)
        ctx = self.writes.write_context()
        return await self.writes.transact(lambda view: plan_alloc_transitions(view, ctx, request),
                                          fence)

"""UpdateEvaluations: updates that never create, creates that never update.

The eval broker's outcomes (Ack, Nack, cancel, failure) change the
evaluation it handed out, so they are written as *updates*, each compared
inside the etcd txn on the mod_revision the writer held (``modify_index``);
follow-up evaluations are *creates* of new ids, compared absent. The plan
and its rules are :func:`drover.state.evaluations.core.evals.plan_update`: a conflict
re-plans on a fresh view, where the rules name the evaluation at fault
(:class:`EvaluationGone` NOT_FOUND, :class:`EvaluationChanged`
FAILED_PRECONDITION, :class:`EvaluationExists` ALREADY_EXISTS, each with
``eval_id`` in the ErrorInfo metadata).

All or nothing, one txn. Updates and terminal statuses are broker
outcomes: leader only (the call must carry the broker leader's fence).
"""

from __future__ import annotations

from typing import Any

from drover.coord.fence import Fence
from drover.state.core.rules import (
    OUTCOMES,
    within_cap,
)
from drover.state.core.validate import validated_eval_updates
from drover.state.evaluations.core import evals as plans
from drover.state.pipeline import Caller, WriteCalls


class EvaluationUpdateRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    async def update(self, request: Any, caller: Caller) -> Any:
        updates, creates = validated_eval_updates(request)
        within_cap(len(updates) + len(creates), "evaluations", self.writes.max_objects)
        # Updates are broker outcomes, as are terminal statuses: leader only.
        if updates or any(ev.status in OUTCOMES for ev in creates):
            fence: Fence | None = self.writes.require_fence(caller, "UpdateEvaluations")
        else:
            fence = self.writes.fence(caller)
            if fence is not None:
                self.writes.require_fence(caller, "UpdateEvaluations")
        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plans.plan_update(view, ctx, updates, creates), fence)

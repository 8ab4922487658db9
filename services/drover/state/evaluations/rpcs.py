"""Evaluation writes: UpsertEvaluations, UpdateEvaluations and
DeleteEvaluations (reads: GetEvaluation, ListEvaluations, CountEvaluations,
:mod:`drover.state.queries`). Delete by ids is here, all or nothing in one
txn; by filter, the paged delete a million-evaluation backlog needs, is
:mod:`drover.state.evaluations.delete_by_filter`.

UpdateEvaluations: updates that never create, creates that never update.

The eval broker's outcomes (Ack, Nack, cancel, failure) change the
evaluation it handed out, so they are written as *updates*, each compared
inside the etcd txn on the mod_revision the writer held (``modify_index``);
follow-up evaluations are *creates* of new ids, compared absent. The plan
and its rules are :func:`drover.state.evaluations.core.evals.plan_update`: a conflict
re-plans on a fresh view, where the rules name the evaluation at fault
(:class:`~drover.errors.EvaluationGone` NOT_FOUND,
:class:`~drover.errors.EvaluationChanged` FAILED_PRECONDITION,
:class:`~drover.errors.EvaluationExists` ALREADY_EXISTS, each with
``eval_id`` in the ErrorInfo metadata).

All or nothing, one txn. Updates and terminal statuses are broker
outcomes: leader only (the call must carry the broker leader's fence).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from drover.coord.fence import Fence
from drover.errors import InvalidArgument
from drover.state.core.rules import OUTCOMES, within_cap
from drover.state.core.validate import (
    check_name,
    namespace_arg,
    owned_evals,
    validated_eval_updates,
)
from drover.state.evaluations.core import evals as plans
from drover.state.evaluations.delete_by_filter import DeleteByFilter
from drover.state.pipeline import Caller, WriteCalls

_STATUS = attrgetter("status")


class EvaluationsRpc:
    def __init__(self, writes: WriteCalls, by_filter: DeleteByFilter) -> None:
        self.writes, self._by_filter = writes, by_filter

    async def upsert(self, request: Any, caller: Caller) -> Any:
        """Create evaluations, or (leader only) write an outcome.

        Anyone allowed may *create* pending or blocked evaluations. Changing
        an existing evaluation, or writing a terminal status, is a broker
        outcome: it requires the leader's fence (FENCE_REQUIRED without one);
        see :func:`drover.state.evaluations.core.evals.plan_upsert`.
        """
        if not request.evaluations:
            raise InvalidArgument("evaluations must not be empty",
                                  metadata={"field": "evaluations"})
        within_cap(len(request.evaluations), "evaluations", self.writes.max_objects)
        # The request is this call's alone and nothing reads it after the
        # handler: its evaluations are checked and written as they are.
        evs = owned_evals(request.evaluations)
        fence = self.writes.fence(caller)
        if fence is not None:
            self.writes.require_fence(caller, "UpsertEvaluations")

        def needs_fence() -> None:
            self.writes.require_fence(caller, "an existing evaluation")

        def terminal_needs_fence() -> None:
            # judged after the identical re-create, which is OK whatever its status
            self.writes.require_fence(caller, "a terminal evaluation status")

        terminal = fence is None and not OUTCOMES.isdisjoint(map(_STATUS, evs))
        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plans.plan_upsert(view, ctx, evs, needs_fence if fence is None else None,
                                           terminal_needs_fence if terminal else None),
            fence)

    # -- delete -----------------------------------------------------------

    async def delete(self, request: Any, caller: Caller) -> Any:
        by_ids, by_filter = bool(request.ids), bool(request.filter.strip())
        if by_ids == by_filter:
            raise InvalidArgument("set exactly one of ids or filter",
                                  metadata={"field": "ids" if by_ids else "filter"})
        if by_ids and (request.page_token or request.job_id):
            raise InvalidArgument("page_token and job_id apply only to a filter delete",
                                  metadata={"field": "page_token" if request.page_token
                                            else "job_id"})
        if by_ids:
            return await self._delete_ids(request, caller)
        return await self._by_filter.delete(request, caller)

    async def _delete_ids(self, request: Any, caller: Caller) -> Any:
        ids = list(dict.fromkeys(request.ids))
        for i, eid in enumerate(ids):
            check_name(eid, f"ids[{i}]")
        within_cap(len(ids), "ids", self.writes.max_objects)
        ns = namespace_arg(request.namespace)
        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plans.plan_delete_ids(view, ctx, ns, ids, request.dry_run),
            self.writes.fence(caller), sync_first=True)

    # -- update (broker outcomes) -----------------------------------------

    async def update(self, request: Any, caller: Caller) -> Any:
        """UpdateEvaluations (module doc)."""
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

"""Evaluation writes: upsert, and delete (reads: :mod:`drover.state.queries`)
(by ids here: all or nothing in one txn; by filter, the paged delete a
million-evaluation backlog needs, in :mod:`drover.state.eval_delete`).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from drover.errors import InvalidArgument
from drover.state.core import evals as plans
from drover.state.core.rules import OUTCOMES, within_cap
from drover.state.core.validate import check_name, namespace_arg, owned_evals
from drover.state.eval_delete import DeleteByFilter
from drover.state.write_calls import WriteCalls

_STATUS = attrgetter("status")


class EvaluationsRpc:
    def __init__(self, writes: WriteCalls, by_filter: DeleteByFilter) -> None:
        self.writes, self._by_filter = writes, by_filter

    async def UpsertEvaluations(self, request: Any, context: Any) -> Any:
        """Create evaluations, or (leader only) write an outcome.

        Anyone allowed may *create* pending or blocked evaluations. Changing
        an existing evaluation, or writing a terminal status, is a broker
        outcome: it requires the leader's fence (FENCE_REQUIRED without one);
        see :func:`drover.state.core.evals.plan_upsert`.
        """
        if not request.evaluations:
            raise InvalidArgument("evaluations must not be empty",
                                  metadata={"field": "evaluations"})
        within_cap(len(request.evaluations), "evaluations", self.writes.max_objects)
        # The request is this call's alone and nothing reads it after the
        # handler: its evaluations are checked and written as they are.
        evs = owned_evals(request.evaluations)
        fence = self.writes.fence(context)
        if fence is not None:
            self.writes.require_fence(context, "UpsertEvaluations")

        def needs_fence() -> None:
            self.writes.require_fence(context, "an existing evaluation")

        def terminal_needs_fence() -> None:
            # judged after the identical re-create, which is OK whatever its status
            self.writes.require_fence(context, "a terminal evaluation status")

        terminal = fence is None and not OUTCOMES.isdisjoint(map(_STATUS, evs))
        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plans.plan_upsert(view, ctx, evs, needs_fence if fence is None else None,
                                           terminal_needs_fence if terminal else None),
            fence)

    # -- delete -----------------------------------------------------------

    async def DeleteEvaluations(self, request: Any, context: Any) -> Any:
        by_ids, by_filter = bool(request.ids), bool(request.filter.strip())
        if by_ids == by_filter:
            raise InvalidArgument("set exactly one of ids or filter",
                                  metadata={"field": "ids" if by_ids else "filter"})
        if by_ids and (request.page_token or request.job_id):
            raise InvalidArgument("page_token and job_id apply only to a filter delete",
                                  metadata={"field": "page_token" if request.page_token
                                            else "job_id"})
        if by_ids:
            return await self._delete_ids(request, context)
        return await self._by_filter.delete(request, context)

    async def _delete_ids(self, request: Any, context: Any) -> Any:
        ids = list(dict.fromkeys(request.ids))
        for i, eid in enumerate(ids):
            check_name(eid, f"ids[{i}]")
        within_cap(len(ids), "ids", self.writes.max_objects)
        ns = namespace_arg(request.namespace)
        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plans.plan_delete_ids(view, ctx, ns, ids, request.dry_run),
            self.writes.fence(context), sync_first=True)

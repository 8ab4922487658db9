"""Evaluation writes: upsert, and delete (reads: :mod:`drover.state.queries`)
(by ids here: all or nothing in one txn; by filter, the paged delete a
million-evaluation backlog needs, in :mod:`drover.state.evaluations.delete_by_filter`).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from drover.errors import InvalidArgument
from drover.state.core.rules import OUTCOMES, within_cap
from drover.state.core.validate import check_name, namespace_arg, owned_evals
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
        if fence is None and not OUTCOMES.isdisjoint(map(_STATUS, evs)):
            self.writes.require_fence(caller, "a terminal evaluation status")
        elif fence is not None:
            self.writes.require_fence(caller, "UpsertEvaluations")

        def needs_fence() -> None:
            self.writes.require_fence(caller, "an existing evaluation")

        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plans.plan_upsert(view, ctx, evs, needs_fence if fence is None else None),
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

"""Evaluation RPCs: get (with its chain), list, count, upsert, and delete
(by ids here: all or nothing in one txn; by filter, the paged delete a
million-evaluation backlog needs, in :mod:`drover.state.eval_delete`).
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.errors import InvalidArgument, NotFound
from drover.paging import PageRequest
from drover.state import codec
from drover.state.cache_view import CacheView
from drover.state.core import evals as plans
from drover.state.core.rules import OUTCOMES, BrokerNotPaused, broker_paused, within_cap
from drover.state.core.validate import owned_evals, validate_eval, validated_evals
from drover.state.eval_delete import DeleteByFilterRpc
from drover.state.reads import ALL_NAMESPACES, check_name, list_namespace, namespace_arg
from drover.state.store import Compare

__all__ = ["OUTCOMES", "BrokerNotPaused", "EvaluationsRpc", "validate_eval", "validated_evals"]

RETRIES = 3


#: How many of a job's evaluations a related-chain walk reads at most.
RELATED_SCAN = 1000


class EvaluationsRpc(DeleteByFilterRpc):
    def _find_eval(self, namespace: str, eval_id: str) -> tuple[str, Any] | None:
        table = self.cache.tables[codec.EVALUATIONS]
        namespaces = (
            [namespace] if namespace not in ("", ALL_NAMESPACES) else table.namespaces()
        )
        for ns in namespaces:
            e = table.objects.get(f"{ns}/{eval_id}")
            if e is not None:
                return f"{ns}/{eval_id}", e
        return None

    def _chain(self, ev: Any) -> list[Any]:
        """Every evaluation linked to ``ev`` through previous/next/blocked
        links, in either direction and transitively (Nomad walks the whole
        chain), oldest first. Chains stay within one job, so the walk reads
        only that job's evaluations (at most RELATED_SCAN of them)."""
        table = self.cache.tables[codec.EVALUATIONS]
        prefix = ev.namespace + "/"
        links: dict[str, set[str]] = {}
        evs: dict[str, Any] = {}
        for n, order in enumerate(table.candidates("job_id", ev.job_id).iterate(None, False)):
            if n >= RELATED_SCAN:
                break
            e = table.objects.get(order[1]) if order[1].startswith(prefix) else None
            if e is None:
                continue
            other = table.decode_entry(e)
            evs[other.id] = other
            for rid in (other.previous_eval, other.next_eval, other.blocked_eval):
                if rid:
                    links.setdefault(other.id, set()).add(rid)
                    links.setdefault(rid, set()).add(other.id)
        seen, todo = {ev.id}, [ev.id]
        while todo:
            for rid in links.get(todo.pop(), ()):
                if rid not in seen:
                    seen.add(rid)
                    todo.append(rid)
        out = [evs[i] for i in seen if i != ev.id and i in evs]
        return sorted(out, key=lambda e: (e.create_index, e.id))

    async def GetEvaluation(self, request: Any, context: Any) -> Any:
        check_name(request.id, "id")
        if request.namespace:
            check_name(request.namespace, "namespace", allow_all=True)
        index = await self.reader.prepare(codec.EVALUATIONS, request.query)
        found = self._find_eval(request.namespace, request.id)
        if found is None:
            raise NotFound(f"evaluation {request.id!r} not found")
        table = self.cache.tables[codec.EVALUATIONS]
        ev = table.decode_entry(found[1])
        related = self._chain(ev) if request.include_related else []
        return state_pb2.GetEvaluationResponse(evaluation=ev, related=related,
                                               meta=self.reader.meta(index))

    async def ListEvaluations(self, request: Any, context: Any) -> Any:
        index = await self.reader.prepare(codec.EVALUATIONS, request.query)
        items, token = self.reader.list(codec.EVALUATIONS, PageRequest(
            "ListEvaluations", request.page_size, request.page_token, request.order_by,
            list_namespace(request.namespace), request.prefix), request.filter)
        return state_pb2.ListEvaluationsResponse(
            evaluations=items, next_page_token=token, meta=self.reader.meta(index))

    async def CountEvaluations(self, request: Any, context: Any) -> Any:
        scope = {"job_id": check_name(request.job_id, "job_id")} if request.job_id else None
        index = await self.reader.prepare(codec.EVALUATIONS, request.query)
        n = self.reader.count(codec.EVALUATIONS, request.filter,
                              list_namespace(request.namespace), scope)
        return state_pb2.CountEvaluationsResponse(count=n, meta=self.reader.meta(index))

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
        within_cap(len(request.evaluations), "evaluations")
        # The request is this call's alone and nothing reads it after the
        # handler: its evaluations are checked and written as they are.
        evs = owned_evals(request.evaluations)
        fence = self.fence(context)
        if fence is None and any(e.status in OUTCOMES for e in evs):
            self.require_fence(context, "a terminal evaluation status")
        elif fence is not None:
            self.require_fence(context, "UpsertEvaluations")

        def needs_fence() -> None:
            self.require_fence(context, "an existing evaluation")

        ctx = self.write_context()
        return await self.transact(
            lambda view: plans.plan_upsert(view, ctx, evs, needs_fence if fence is None else None),
            fence)

    # -- delete -----------------------------------------------------------

    def _broker_paused(self) -> Compare:
        """The broker-paused rule on this replica's cache, as the compare
        that keeps it true inside the txn."""
        mod = broker_paused(CacheView(self.cache.tables, self.cache.revision, False))
        key = self.keys.key(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID)
        return Compare(key, "mod", mod)

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
        return await self._delete_filter(request, context)

    async def _delete_ids(self, request: Any, context: Any) -> Any:
        ids = list(dict.fromkeys(request.ids))
        for i, eid in enumerate(ids):
            check_name(eid, f"ids[{i}]")
        within_cap(len(ids), "ids")
        ns = namespace_arg(request.namespace)
        ctx = self.write_context()
        return await self.transact(
            lambda view: plans.plan_delete_ids(view, ctx, ns, ids, request.dry_run),
            self.fence(context), sync_first=True)

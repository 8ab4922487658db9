"""Job writes: register, deregister, start, revert, scale, and an operator's
alloc stop. Reads: :mod:`drover.state.queries`.

Writes are planned by :mod:`drover.state.jobs.core.register` (what RegisterJob and
DeregisterJob write, atomically, in one txn) and run by
:meth:`WriteCalls.transact`; a purge is many bounded txns (:mod:`.reaper`).
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.errors import NotFound
from drover.state.allocations.core.alloc_stop import plan_stop_alloc
from drover.state.cache import Cache
from drover.state.core import codec
from drover.state.core.cache_view import CacheView
from drover.state.core.validate import check_name, namespace_arg, validate_job
from drover.state.jobs.core import purge
from drover.state.jobs.core import register as plans
from drover.state.jobs.core.job_plan import plan_job
from drover.state.pipeline import Caller, WriteCalls
from drover.state.reaper import purge_job


def namespace_of(request: Any) -> str:
    """The namespace of a request that names one object by ``id`` (both
    checked: one namespace, never all)."""
    ns = namespace_arg(request.namespace, allow_all=False)
    check_name(request.id, "id")
    return ns


class JobsRpc:
    def __init__(self, cache: Cache, keys: codec.KeyCodec, writes: WriteCalls) -> None:
        self.cache, self.keys, self.writes = cache, keys, writes

    def _job(self, namespace: str, job_id: str) -> tuple[Any, int] | None:
        e = self.cache.tables[codec.JOBS].objects.get(f"{namespace}/{job_id}")
        if e is None:
            return None
        return self.cache.tables[codec.JOBS].decode_entry(e), e[1]

    async def register(self, request: Any, caller: Caller) -> Any:
        job = validate_job(request.job)
        ctx = self.writes.write_context()
        # Optimistic: the txn compares the job's mod_revision, so a stale
        # cache view costs a re-plan, never a lost update.
        return await self.writes.transact(
            lambda view: plans.plan_register(view, ctx, job, enforce_index=request.enforce_index,
                                             job_modify_index=request.job_modify_index),
            self.writes.fence(caller))

    async def deregister(self, request: Any, caller: Caller) -> Any:
        ns = namespace_of(request)
        if request.purge:
            await self.cache.sync()
            if self._job(ns, request.id) is None:
                raise NotFound(f"job {request.id!r} not found in namespace {ns!r}")
            view = CacheView(self.cache.tables, self.cache.revision, True)
            if next(purge.blockers(view, ns, request.id), None) is None:
                return await self._purge(ns, request.id, caller)
            # Allocations still run: stop first, remove once they stopped.
            return await self.writes.write(
                lambda view, ctx: purge.plan_stop_for_purge(view, ctx, ns, request.id),
                caller, sync_first=True)
        return await self.writes.write(
            lambda view, ctx: plans.plan_deregister(view, ctx, ns, request.id),
            caller, sync_first=True)

    async def start(self, request: Any, caller: Caller) -> Any:
        ns = namespace_of(request)
        return await self.writes.write(
            lambda view, ctx: plans.plan_start(view, ctx, ns, request.id),
            caller, sync_first=True)

    async def revert(self, request: Any, caller: Caller) -> Any:
        ns = namespace_of(request)
        prior = (request.enforce_prior_version if request.HasField("enforce_prior_version")
                 else None)
        return await self.writes.write(
            lambda view, ctx: plans.plan_revert(view, ctx, ns, request.id, request.version, prior),
            caller)

    async def scale(self, request: Any, caller: Caller) -> Any:
        ns = namespace_of(request)
        check_name(request.group, "group")
        index = request.enforce_index if request.HasField("enforce_index") else None
        return await self.writes.write(
            lambda view, ctx: plans.plan_scale(view, ctx, ns, request.id, request.group,
                                               request.count, index, request.message),
            caller)

    async def stop_allocation(self, request: Any, caller: Caller) -> Any:
        ns = namespace_of(request)
        return await self.writes.write(
            lambda view, ctx: plan_stop_alloc(view, ctx, ns, request.id),
            caller, sync_first=True)

    async def plan(self, request: Any, caller: Caller) -> Any:
        """A dry run on a synced view (:mod:`drover.state.jobs.core.job_plan`)."""
        job = validate_job(request.job)
        await self.cache.sync()
        view = CacheView(self.cache.tables, self.cache.revision, True)
        return plan_job(view, self.writes.write_context(), job)

    async def _purge(self, ns: str, job_id: str, caller: Caller) -> Any:
        """Purge means gone: the job and all it owns, in bounded txns (:mod:`.reaper`)."""
        tally, rev = await purge_job(self.writes.transact, self.keys, ns, job_id,
                                     self.writes.fence(caller))
        return state_pb2.DeregisterJobResponse(
            job_modify_index=rev, index=rev,
            purged_versions=tally.count(codec.JOB_VERSIONS),
            purged_deployments=tally.count(codec.DEPLOYMENTS),
            purged_evaluations=tally.count(codec.EVALUATIONS),
            purged_allocations=tally.count(codec.ALLOCATIONS),
            purge_txns=tally.txns,
        )

"""``transact``: every write of the state service, with ONE retry policy.

A *planner* is a pure function of a :class:`~drover.state.core.view.View`
(and what it closed over: the validated request, the call's clock reading)
returning a :class:`~drover.state.core.plan.WritePlan`. The policy:

1. plan on this replica's cache as it is (optimistic: the plan's compares
   catch a stale view), or after a sync when ``sync_first`` (the call must
   judge on current data before it writes, e.g. "not found");
2. a plan with no ops answers at once, with the view's revision;
3. commit the plan with :meth:`drover.state.writes.Writer.commit` (one txn,
   fenced when the call carries a fence);
4. on :class:`Conflict`, sync the cache and plan again on the fresh view:
   the planner re-checks its rules there, so a refusal a conflict reveals
   (the evaluation was deleted, the deployment moved) is the caller's
   answer, named by cause. A rule that refuses on a stale view asks for
   this too (:class:`~drover.state.core.view.Replan`);
5. at most :data:`ATTEMPTS` commits, each re-plan after a short jittered
   pause (:data:`CONFLICT_BACKOFF`); the last conflict is raised. These
   compares are drover's own (its writers racing on one object: a client
   report, a plan, the watcher's write), so a user's call must not fail
   for them: the budget is sized for the writers that race on one object.
   A plan marked ``retry=False`` (its compares are the caller's) raises its
   ``conflict_error`` on the first conflict, and a rule that judges the
   caller's own precondition (``--check-index``) refuses on the fresh view.
   :class:`FenceLost` is never retried: a deposed leader's write is
   refused, not re-planned.

The view is the cache's (:func:`transact`); the ACL keyspace, which the
cache does not hold, is read from etcd on each attempt instead
(:func:`transact_on` with the AclService's view source): the same policy,
the same commit primitive.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from drover.coord.fence import Fence
from drover.errors import Conflict
from drover.state.cache import Cache
from drover.state.core.cache_view import CacheView
from drover.state.core.plan import WritePlan
from drover.state.core.view import Replan, View
from drover.state.writes import Writer

#: Commits per call before a conflict is the caller's (CONFLICT: retry):
#: enough for the few writers that race on one object (module doc, 5.).
ATTEMPTS = 10
#: Pause before re-planning after the n-th conflict in a row: uniform in
#: [0, min(cap, base * 2**n)] seconds, so racing writers spread out.
CONFLICT_BACKOFF = (0.005, 0.25)

Planner = Callable[[View], WritePlan]


class _AtRevision(Protocol):
    @property
    def revision(self) -> int: ...


V = TypeVar("V", bound=_AtRevision)


async def transact(cache: Cache, writer: Writer, planner: Planner, fence: Fence | None = None,
                   *, sync_first: bool = False, attempts: int = ATTEMPTS) -> Any:
    """Plan on the cache's view, commit, and on a conflict re-plan on a
    fresh (synced) view (module doc)."""
    async def views(fresh: bool) -> View:
        if fresh:
            await cache.sync()
        return CacheView(cache.tables, cache.revision, fresh)
    return await transact_on(views, writer, planner, fence, sync_first=sync_first,
                             attempts=attempts)


async def transact_on(views: Callable[[bool], Awaitable[V]], writer: Writer,
                      planner: Callable[[V], WritePlan], fence: Fence | None = None,
                      *, sync_first: bool = False, attempts: int = ATTEMPTS) -> Any:
    """The policy on any view source: ``views(fresh)`` is the view of one
    attempt (fresh: synced with etcd). Data outside the cache (the ACL
    keyspace, :mod:`drover.state.core.acl`) brings its own source."""
    fresh = sync_first
    commits = 0
    while True:
        view = await views(fresh)
        try:
            plan = planner(view)
        except Replan as e:
            if fresh:  # a planner must not ask twice: its refusal stands
                raise e.cause from None
            fresh = True
            continue
        if not plan.writes:
            return plan.respond(view.revision)
        try:
            rev = await writer.commit(plan.compares, plan.ops, fence, conflict=plan.conflict)
        except Conflict as e:
            commits += 1
            if not plan.retry:
                raise plan.conflict_error() from e
            if commits >= attempts:
                raise
            fresh = True
            base, cap = CONFLICT_BACKOFF
            await asyncio.sleep(random.uniform(0.0, min(cap, base * 2 ** commits)))
            continue
        return plan.respond(rev)

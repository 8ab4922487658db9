"""The write pipeline: every object write of the state service, from a
planner to a committed etcd txn, with ONE retry policy.

Three layers, top down:

- :class:`WriteCalls`: what every write family uses around its plan: the
  clock, the call's fence and node proof (from its :class:`Caller`), the
  :class:`~drover.state.core.plan.WriteContext`, and
  :meth:`WriteCalls.transact`, which follows each plan with the job
  versions it retires and the job statuses it changes;
- :func:`transact` / :func:`transact_on`: the retry policy (below);
- :class:`Writer`: one etcd txn, compared, fenced, and marked (below).

**The retry policy.** A *planner* is a pure function of a :class:`~drover.state.core.view.View`
(and what it closed over: the validated request, the call's clock reading)
returning a :class:`~drover.state.core.plan.WritePlan`. The policy:

1. plan on this replica's cache as it is (optimistic: the plan's compares
   catch a stale view), or after a sync when ``sync_first`` (the call must
   judge on current data before it writes, e.g. "not found");
2. a plan with no ops answers at once, with the view's revision;
3. commit the plan with :meth:`Writer.commit` (one txn,
   fenced when the call carries a fence);
4. on :class:`Conflict`, sync the cache and plan again on the fresh view:
   the planner re-checks its rules there, so a refusal a conflict reveals
   (the evaluation was deleted, the deployment moved) is the caller's
   answer, named by cause. A rule that refuses on a stale view asks for
   this too (:class:`~drover.state.errors.Replan`);
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

**The commit.** Each txn carries (a) the caller's compares (``mod_revision`` of every object
it read, so a concurrent change aborts it rather than being overwritten),
(b) for leader writers, the fence ``create_revision(leader_key) == term``
from the ``drover-fence`` metadata, and (c) a put of the cache's revision
marker (:func:`drover.state.cache.marker_put`), which is what makes
consistent reads exact. A failed txn is either :class:`FenceLost` (the
fence key is gone or has another term) or :class:`Conflict` (re-read and
retry). After success this replica's cache applies the txn at once when it
is exactly one revision behind it (:meth:`Cache.apply_committed`: the usual
case, and no watch round trip), else the write waits briefly for the watch
to deliver it; either way the writer reads its own write here even with
``stale``.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from drover.acl import IdentityKind, PermissionDenied
from drover.acl.node_secret import presented_node_secret
from drover.coord.fence import FENCE_METADATA, Fence, parse_fence
from drover.coord.kv import Compare, KVStore, Op, objects_per_txn
from drover.errors import Conflict, FenceLost, InvalidArgument, Unavailable
from drover.rpc.acl import current_identity
from drover.state.cache import Cache, marker_put
from drover.state.config import WriterConfig
from drover.state.core import codec
from drover.state.core.cache_view import CacheView
from drover.state.core.plan import WriteContext, WritePlan
from drover.state.core.rules import leader_fence
from drover.state.core.view import View
from drover.state.errors import Replan
from drover.state.jobs.core import job_status, job_versions
from drover.state.nodes.core.node_secret import NodeProof


def fence_from(metadata: Iterable[tuple[str, Any]]) -> Fence | None:
    """The ``drover-fence`` of a call's metadata, if any."""
    for key, value in metadata:
        if key == FENCE_METADATA:
            return parse_fence(str(value))
    return None


class Writer:
    def __init__(self, store: KVStore, keys: codec.KeyCodec, cache: Cache,
                 config: WriterConfig) -> None:
        self.store, self.keys, self.cache = store, keys, cache
        self.config = config
        self.max_txn_ops = self.config.max_txn_ops

    async def commit(
        self, compares: Sequence[Compare], ops: Sequence[Op], fence: Fence | None = None,
        *, conflict: str = "an object changed concurrently; re-read and retry",
    ) -> int:
        """Apply ``ops`` if every compare holds; the txn's revision."""
        cmps = list(compares)
        if fence is not None:
            cmps.append(Compare(fence.leader_key.encode(), "create", fence.term))
        if len(ops) > objects_per_txn(self.max_txn_ops) or len(cmps) > self.max_txn_ops:
            raise InvalidArgument(
                f"the request writes {len(ops)} objects with {len(cmps)} preconditions; one "
                f"etcd txn here holds at most {self.max_txn_ops} of either (split it)",
                metadata={"field": "request"})
        committed = [*ops, marker_put(self.keys)]
        result = await self.store.txn(cmps, committed)
        if not result.succeeded:
            if fence is not None:
                page = await self.store.range(fence.leader_key.encode(), b"")
                current = page.kvs[0].create_revision if page.kvs else 0
                if current != fence.term:
                    raise FenceLost(
                        f"fence {fence.header()} lost: the leader key "
                        + (f"now has term {current}" if current else "is gone"),
                        metadata={"leader_key": fence.leader_key, "term": str(fence.term)},
                    )
            raise Conflict(conflict)
        if self.cache.apply_committed(result.revision, committed):
            return result.revision  # read-your-write with no watch round trip
        try:
            await self.cache.wait_for_revision(result.revision, within=2.0)
        except Unavailable:
            pass  # the write is durable; only read-your-write on this replica waits
        return result.revision


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
    keyspace, :mod:`drover.state.acl.core.acl`) brings its own source."""
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


@dataclass(frozen=True)
class Caller:
    """What a write call carries besides its request: its gRPC metadata
    (the ``drover-fence``, the node secret). Built by the servicer (the only
    module that sees a gRPC context); an empty one for calls from within."""

    metadata: tuple[tuple[str, Any], ...] = ()


class WriteCalls:
    def __init__(
        self, cache: Cache, writer: Writer, keys: codec.KeyCodec,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.cache, self.writer, self.keys = cache, writer, keys
        self._wall = wall

    def now(self) -> Timestamp:
        ts = Timestamp()
        ts.FromNanoseconds(int(self._wall() * 1e9))
        return ts

    @property
    def max_objects(self) -> int:
        """Objects one write request may carry here (:attr:`WriteContext.max_objects`)."""
        return objects_per_txn(self.writer.max_txn_ops)

    def write_context(self) -> WriteContext:
        """One clock reading for the call, random UUIDs for new objects, the
        txn size this replica was told, and the cache's tables told what the
        call's plans put (applied with no parse back; tables a re-list
        replaced meanwhile are told in vain, which costs only that parse)."""
        return WriteContext(self.keys, self.now(), lambda: str(uuid.uuid4()),
                            self.writer.max_txn_ops, on_put=self.cache.tables.expect_put)

    async def transact(self, planner: Planner, fence: Fence | None, *,
                       sync_first: bool = False, attempts: int = ATTEMPTS) -> Any:
        """Every write, each plan followed by the job versions it retires
        (:func:`drover.state.jobs.core.job_versions.prune`) and the job statuses
        and summaries it changes (:func:`drover.state.jobs.core.job_status.follow`)."""
        on_put, max_objects = self.cache.tables.expect_put, self.max_objects
        tracked = self.writer.config.job_tracked_versions

        def planned(view: View) -> WritePlan:
            plan = job_versions.prune(view, planner(view), self.keys, tracked, max_objects)
            return job_status.follow(view, plan, self.keys, on_put, max_objects)
        return await transact(self.cache, self.writer, planned, fence, sync_first=sync_first,
                              attempts=attempts)

    async def write(self, planner: Callable[[View, WriteContext], WritePlan], caller: Caller,
                    *, sync_first: bool = False) -> Any:
        """The usual write: one clock reading (:meth:`write_context`) for
        the call, ``planner`` run through :meth:`transact` with the call's
        own fence (if it carries one)."""
        ctx = self.write_context()
        return await self.transact(lambda view: planner(view, ctx), self.fence(caller),
                                   sync_first=sync_first)

    def fence(self, caller: Caller) -> Fence | None:
        return fence_from(caller.metadata)

    def node_proof(self, caller: Caller) -> NodeProof:
        """What the call proves about the node it speaks for: the node secret
        it presents, which it must with ACLs on unless it is a drover server
        (:mod:`drover.state.nodes.core.node_secret`)."""
        presented = presented_node_secret(caller.metadata)
        identity = current_identity()  # None: ACLs off
        return NodeProof(presented, identity is not None
                         and identity.kind is not IdentityKind.SERVER)

    def require_fence(self, caller: Caller, what: str) -> Fence:
        """The call's fence, which must name an election key of this keyspace
        (:func:`drover.state.core.rules.leader_fence`), from a drover server
        when ACLs are on."""
        fence = fence_from(caller.metadata)
        leader_fence(fence.leader_key if fence else None, self.keys.base, what)
        assert fence is not None
        identity = current_identity()  # None: ACLs off
        if identity is not None and identity.kind is not IdentityKind.SERVER:
            raise PermissionDenied(
                f"{what} may only be written by a drover server (its server identity); "
                f"{identity.describe} is not one", metadata={"capability": "server"})
        return fence

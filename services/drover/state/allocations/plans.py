"""SubmitPlan: Nomad's plan applier (the planner and its rules are
:mod:`drover.state.allocations.core.placement` and :mod:`drover.state.allocations.core.usage`).

Any number of replicas apply plans; etcd orders them. The first attempt
judges the plan on the replica's view as it is (no sync: the worker read
its job through the state service, and the txn's compares catch whatever
moved since), builds one txn with only the nodes that still fit (each
rewriting and comparing its usage record) and commits it. A refusal judged
on that view is judged again on a synced one before it is given
(:mod:`drover.state.allocations.core.placement`). A txn
that fails because another plan touched one of its nodes meanwhile (through
any replica) is judged again on a freshly synced view, at most
:data:`PLAN_ATTEMPTS` times: the outcome is partial (the refused nodes
named, with the index to refresh at), never an overcommit. When every
attempt lost its race nothing is committed and every node is answered
"node changed". A plan whose job or allocations moved is PLAN_STALE (the
worker plans again on what it re-reads).

Before any of it the plan's delivery is checked (:mod:`drover.state.allocations.eval_token`):
a plan whose evaluation delivery ended is PLAN_DELIVERY_ENDED, one the
broker cannot vouch for is UNAVAILABLE (BROKER_UNREACHABLE), and the txn
compares the vouching broker leader's term, so a failover between the
check and the commit refuses the plan too.

Where a plan's time goes is the histogram ``drover.state.plan.step.duration``
(seconds, one sample per plan and ``step``): ``validate`` (the request
checked and decoded), ``vouch`` (the delivery check's round trips),
``lock`` (waiting for the replica's plans before it), ``judge`` (the plan
judged on the cache's view: :func:`plan_submit`, every attempt) and
``commit`` (the rest of the txn: the job versions and statuses it
changes, etcd's commit and the cache applying it, every attempt). etcd's own
round trip is ``drover.state.etcd.txn.duration`` (every txn of the replica).

Plans on one replica still go one at a time (a lock): not for safety
(etcd orders them) but so that two plans on one replica do not make each
other's txns fail for nothing. The delivery check is made before the plan
queues for the lock: its two round trips (the broker leader's key, the
broker's answer) stay out of the one-at-a-time part, which bounds the
replica's plans per second. It restarts
the broker's nack timer, so the txn must follow it well within the nack
timeout (Nomad's 60 s): a plan that waited for the lock longer than
:data:`VOUCH_FRESH` is checked again before its txn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from drover.errors import Conflict
from drover.state.allocations.core.eval_token import TOKEN_MISMATCH
from drover.state.allocations.core.placement import nothing_committed, plan_submit
from drover.state.allocations.eval_token import TokenCheck, Unchecked, Vouched
from drover.state.core.plan import WriteContext
from drover.state.core.rules import within_cap
from drover.state.core.validate import check_name, namespace_arg, validated_plan
from drover.state.errors import PlanDeliveryEnded
from drover.state.pipeline import Caller, WriteCalls
from drover.telemetry import meter

#: Commits one plan may try before its nodes are all answered "node changed".
PLAN_ATTEMPTS = 5
#: Seconds a delivery check stays good for the txn that follows it (far
#: inside the broker's nack timeout, which the check restarts).
VOUCH_FRESH = 5.0
#: The steps of :data:`PLAN_STEP` (module doc), in the order a plan takes them.
PLAN_STEPS = ("validate", "vouch", "lock", "judge", "commit")
PLAN_STEP = "drover.state.plan.step.duration"


class PlansRpc:
    def __init__(self, writes: WriteCalls, token_check: TokenCheck | None = None) -> None:
        self.writes = writes
        self.token_check = token_check or Unchecked()
        self._plan_lock: asyncio.Lock | None = None
        self._step = meter("drover.state").create_histogram(
            PLAN_STEP, unit="s", description="SubmitPlan's time per plan, by step")
        self._step_labels = {step: {"step": step} for step in PLAN_STEPS}

    def _took(self, step: str, seconds: float) -> None:
        self._step.record(seconds, self._step_labels[step])

    def _lock(self) -> asyncio.Lock:
        if self._plan_lock is None:
            self._plan_lock = asyncio.Lock()
        return self._plan_lock

    async def submit(self, request: Any, caller: Caller) -> Any:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        ns = namespace_arg(request.namespace, allow_all=False)
        check_name(request.job_id, "job_id")
        placements, updates, evs = validated_plan(request, ns)
        # One usage record per node touched rides in the same txn.
        nodes = {a.node_id for a in placements} | {a.node_id for a in updates}
        within_cap(len(placements) + len(updates) + len(evs) + len(nodes), "plan",
                   self.writes.max_objects)
        ctx = self.writes.write_context()
        t1 = loop.time()
        self._took("validate", t1 - t0)
        # Checked before the plan queues for the lock, so the check's round
        # trips never hold it (module doc).
        vouched, at = await self._vouch(request)
        self._took("vouch", at - t1)
        async with self._lock():
            self._took("lock", loop.time() - at)
            if loop.time() - at > VOUCH_FRESH:
                vouched, _ = await self._vouch(request)
            return await self._apply(request, caller, ns, ctx, placements, updates, evs,
                                     vouched)

    async def _vouch(self, request: Any) -> tuple[Vouched | None, float]:
        """The plan's delivery vouched for, and when."""
        vouched = await self.token_check.vouch(request.eval_id, request.eval_token)
        return vouched, asyncio.get_running_loop().time()

    async def _apply(self, request: Any, caller: Caller, ns: str, ctx: WriteContext,
                     placements: Sequence[Any], updates: Sequence[Any], evs: Sequence[Any],
                     vouched: Vouched | None) -> Any:
        """The plan's txn, its delivery vouched for (under the lock)."""
        clock = asyncio.get_running_loop().time
        judged = 0.0

        def judge(view: Any) -> Any:
            nonlocal judged
            t = clock()
            try:
                return plan_submit(view, ctx, request, ns, placements, updates, evs,
                                   delivery=vouched)
            finally:
                judged += clock() - t

        t0 = clock()
        try:
            return await self.writes.transact(judge, self.writes.fence(caller),
                                              attempts=PLAN_ATTEMPTS)
        except Conflict:
            if vouched is not None and not await self.token_check.still_leads(vouched):
                raise PlanDeliveryEnded(
                    f"{TOKEN_MISMATCH}: the broker leader that vouched for evaluation "
                    f"{request.eval_id!r} lost its term while the plan was applied; "
                    f"nothing was written") from None
            return nothing_committed(placements, updates, self.writes.cache.revision)
        finally:
            self._took("judge", judged)
            self._took("commit", clock() - t0 - judged)

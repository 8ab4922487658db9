"""The worker's thin async shell: dequeue (batched), plan, submit, ack.

At-least-once: an evaluation whose processing fails is Nacked (the broker
redelivers it after a delay), and so is one whose wait index the view does
not reach within ``snapshot_wait`` (Nomad's snapshotMinIndex: never plan on
older state); one that succeeds is acked in one AckBatch
with the others of its batch, carrying a blocked evaluation when some
allocations fit nowhere (the state service makes it pending again when a
node joins or capacity is freed) or a follow-up when the plan was capped.
A plan refused as PLAN_STALE is computed again from fresh state, a few
times, before the evaluation is Nacked. A plan committed only in part
(Nomad's partial commit: some nodes had no room left) is planned again
after the view caught up with the refresh index, by Nomad's retry rule
(:mod:`.attempts`); each plan carries the evaluation's delivery token, and
a plan refused because that delivery ended (PLAN_DELIVERY_ENDED) gives the
evaluation up without a Nack (it is no longer this worker's).

A batch's held deliveries keep their nack timers (:mod:`.outstanding`).

A plan never holds more than one etcd txn's worth of writes; when the
planner capped it (``Plan.more``), the evaluation is planned again at once
on what the committed part left, within the same delivery (Nomad's plan has
no such cap: one evaluation places its whole job), up to
``WorkerConfig.plan_rounds`` plans; only past that does it ack with a
"plan-continuation" follow-up, so that one huge job cannot hold a scheduler.

``num_schedulers`` scheduling loops (Nomad's name and default: one per
core) run side by side, each dequeuing its own batch and planning its
evaluations one after another. While one evaluation is planned and its plan
submitted, the loop already reads the next one's job (its job, versions,
deployment and allocations: one GetJobSnapshot), so those round trips stay
off the path; a different job's plan cannot change them, and a read that
went stale meanwhile is caught by the plan's compares (PLAN_STALE, planned
again on fresh reads). The nodes are the view's when planning starts.
Evaluations of different loops belong to different jobs (the broker
delivers one per job) but may compete for the same nodes: the state service
orders their plans (a node's usage record), and a plan that lost a node's
room is committed in part and re-planned.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
import uuid
from dataclasses import dataclass, field

import grpc
from google.protobuf.duration_pb2 import Duration

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2
from drover.coord.kv import MAX_TXN_OPS
from drover.rpc.remote import from_rpc_error, remote_status

from .attempts import Attempts, attempt_limit
from .errors import DeliveryEnded, PlanRefused, ViewBehind
from .follow_ups import conflict_blocked, follow_ups
from .job_allocs import JobAllocCache, JobReads
from .job_reads import read_job
from .node_set import node_set
from .outstanding import Outstanding, ack
from .plan import Plan, Snapshot
from .plan_size import (
    DEFAULT_PLAN_ENTRIES,
    entries_cap,
    job_alloc_set,
    plan_cap,
    plan_objects,
    refused_cap,
)
from .planner import compute_plan
from .timing import StepTimes
from .view import ClusterView

log = logging.getLogger(__name__)

COMPLETE = evaluation_pb2.EVALUATION_STATUS_COMPLETE
BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED

def default_num_schedulers() -> int:
    """Nomad's ``num_schedulers`` default: one scheduling loop per core."""
    return os.cpu_count() or 1


@dataclass(frozen=True)
class WorkerConfig:
    #: Scheduler types dequeued (Nomad's ``enabled_schedulers``).
    schedulers: tuple[str, ...] = ("service", "batch", "system")
    #: Scheduling loops run side by side (Nomad's ``num_schedulers``).
    num_schedulers: int = field(default_factory=default_num_schedulers)
    batch: int = 16
    dequeue_timeout: float = 5.0
    #: How long the view may take to reach an evaluation's wait index before
    #: the evaluation is nacked rather than planned on older state (Nomad's
    #: raftSyncLimit): a system job planned on a view without the node that
    #: joined would never be placed there.
    snapshot_wait: float = 5.0
    plan_retries: int = 5
    #: Plans one delivery may submit when the planner capped them (txn
    #: size) before the rest goes to a "plan-continuation" follow-up.
    plan_rounds: int = 16
    #: etcd's --max-txn-ops as this worker is told it: what one plan may
    #: write (:mod:`.plan_size`).
    max_txn_ops: int = MAX_TXN_OPS
    seed: int | None = None
    #: Stopping waits this long for the cancelled loop (``drover.tasks``).
    stop_timeout: float = 5.0
    #: Restart the nack timers of a batch's held deliveries this often
    #: (:mod:`.outstanding`; Nomad's OutstandingReset), in seconds, well
    #: inside the broker's nack timeout (60 s); 0: never.
    outstanding_reset: float = 15.0
    #: Log the plan steps' running totals (:mod:`.timing`) this often, in
    #: seconds (0: never).
    log_plan_timing: float = 0.0

@dataclass
class WorkerStats:
    evaluations: int = 0
    plans: int = 0
    placed: int = 0
    stale: int = 0
    #: Plans committed only in part, and the placements they had refused.
    partial: int = 0
    refused: int = 0
    nacked: int = 0
    blocked: int = 0
    acked: list[str] = field(default_factory=list)
    #: Where the plans' time went (:mod:`.timing`).
    times: StepTimes = field(default_factory=StepTimes)

class Worker:
    def __init__(self, channel: grpc.aio.Channel, config: WorkerConfig = WorkerConfig()) -> None:
        self.config = config
        self.state = state_pb2_grpc.StateServiceStub(channel)
        self.broker = broker_pb2_grpc.EvalBrokerServiceStub(channel)
        self.view = ClusterView(self.state)
        self.stats = WorkerStats()
        self._rng = random.Random(config.seed)
        #: What one plan may write; lowered when a state replica says less.
        self.max_plan_objects = plan_objects(config.max_txn_ops)
        #: Entries of one field of a request (a refusal may lower it).
        self.max_plan_entries = DEFAULT_PLAN_ENTRIES
        #: The allocations of the jobs planned lately, for delta reads.
        self.job_allocs = JobAllocCache()

    async def run(self) -> None:
        """The view, and ``num_schedulers`` scheduling loops over it."""
        view = asyncio.create_task(self.view.run())
        try:
            await self.view.ready.wait()
            async with asyncio.TaskGroup() as loops:
                for i in range(max(1, self.config.num_schedulers)):
                    loops.create_task(self._schedule(), name=f"worker-scheduler-{i}")
                if self.config.log_plan_timing > 0:
                    loops.create_task(self._log_timing(), name="worker-plan-timing")
        finally:
            view.cancel()

    async def _log_timing(self) -> None:
        """The plan steps' totals every ``log_plan_timing`` seconds, when they moved."""
        last = ""
        while True:
            await asyncio.sleep(self.config.log_plan_timing)
            line = self.stats.times.line()
            if line != last:
                log.info("%s", line)
                last = line

    async def _schedule(self) -> None:
        while True:
            try:
                await self.step()
            except grpc.RpcError as e:
                log.warning("worker: %s", _describe(e))
                await asyncio.sleep(0.5)

    async def step(self) -> int:
        """One Dequeue, its evaluations processed and acked; how many."""
        timeout = Duration()
        timeout.FromMilliseconds(int(self.config.dequeue_timeout * 1000))
        resp = await self.broker.Dequeue(broker_pb2.DequeueRequest(
            schedulers=list(self.config.schedulers), timeout=timeout,
            max_evaluations=self.config.batch), timeout=self.config.dequeue_timeout + 10)
        if not resp.evaluation.id:
            return 0
        deliveries = [(resp.evaluation, resp.token, resp.wait_index)]
        deliveries += [(d.evaluation, d.token, d.wait_index) for d in resp.additional]
        acks = []
        ahead: asyncio.Future[JobReads] | None = None
        async with Outstanding(self.broker, {ev.id: token for ev, token, _ in deliveries},
                               self.config.outstanding_reset) as held:
            try:
                for i, (ev, token, wait_index) in enumerate(deliveries):
                    reads = ahead or asyncio.ensure_future(self.read_job(ev))
                    ahead = (asyncio.ensure_future(self.read_job(deliveries[i + 1][0]))
                             if i + 1 < len(deliveries) else None)
                    got = await self._process_one(ev, wait_index, token, reads)
                    if not got:
                        held.done(ev.id)  # nacked, or no longer ours
                    acks += got
            finally:
                if ahead is not None:
                    ahead.cancel()
            if acks:
                self.stats.acked += await ack(self.broker, acks)
                del self.stats.acked[:-100]
        return len(deliveries)

    async def _process_one(self, ev: evaluation_pb2.Evaluation, wait_index: int, token: str,
                           reads: asyncio.Future[JobReads],
                           ) -> list[broker_pb2.AckRequest]:
        """One delivery processed: its ack, or none (nacked, or no longer ours)."""
        self.stats.evaluations += 1
        try:
            follow_ups = await self.process(ev, wait_index, token, reads)
        except DeliveryEnded as e:
            log.warning("evaluation %s: %s; not ours any more", ev.id, e)
            return []
        except Exception as e:  # one bad evaluation must not stop the worker
            if isinstance(e, (PlanRefused, ViewBehind, grpc.RpcError)):
                log.warning("evaluation %s: %s; nack", ev.id, _describe(e))
            else:
                log.exception("evaluation %s: planning failed; nack", ev.id)
            self.stats.nacked += 1
            try:
                await self.broker.Nack(broker_pb2.NackRequest(eval_id=ev.id, token=token),
                                       timeout=10)
            except grpc.RpcError as ne:
                log.warning("nack %s: %s", ev.id, _describe(ne))
            return []
        return [broker_pb2.AckRequest(eval_id=ev.id, token=token, status=COMPLETE,
                                      follow_ups=follow_ups)]

    async def process(self, ev: evaluation_pb2.Evaluation, wait_index: int,
                      token: str = "", reads: asyncio.Future[JobReads] | None = None,
                      ) -> list[evaluation_pb2.Evaluation]:
        """Plan and submit until accepted; the follow-up evaluations to ack with.
        ``reads``: the job's reads, already under way; later rounds read again."""
        if not await self.view.wait_past(wait_index, within=self.config.snapshot_wait):
            self.view.reload(f"not at the wait index {wait_index}")
            raise ViewBehind(f"the view is at index {self.view.index}, the evaluation needs "
                             f"{wait_index} (waited {self.config.snapshot_wait:g}s)")
        partial = Attempts(attempt_limit(ev.type))
        stale = rounds = 0
        while True:
            index = self.view.index  # what the plan is computed at (nodes may lag)
            times = self.stats.times
            if reads is not None:
                with times.step("read_wait"):
                    got = await reads
                reads = None
                with times.step("snapshot"):
                    snap = self._snapshot(ev, got)
            else:  # a later round: read now, all of it on the path
                with times.step("read_wait"):
                    snap = await self.snapshot(ev)
            with times.step("pack"):
                plan = compute_plan(snap, rng=self._rng, new_id=_new_id,
                                    max_ops=plan_cap(self.max_plan_objects,
                                                     self.max_plan_entries))
            if plan.empty:
                return self._follow_ups(ev, snap, plan, index)
            try:
                resp = await self.submit(ev, snap, plan, token)
            except grpc.RpcError as e:
                stale = await self._refused(e, stale)
                continue
            if not resp.refused:
                rounds += 1
                if not plan.more or rounds >= self.config.plan_rounds:
                    return self._follow_ups(ev, snap, plan, index)
                # Capped, all committed: plan the rest now, on a view that
                # has the committed part (its nodes' usage).
                with times.step("view_wait"):
                    await self.view.wait_past(resp.index, within=1.0)
                continue
            if not await self._partial(ev, resp, partial):
                self.stats.blocked += 1
                return [conflict_blocked(ev, _new_id)]

    async def _refused(self, e: grpc.RpcError, stale: int) -> int:
        """A refused plan: the cap lowered to what the state service takes,
        or a stale one counted (and waited out) towards ``plan_retries``;
        the stale count after it. Raises what ends the evaluation."""
        refused = from_rpc_error(e)
        if refused.reason == "PLAN_DELIVERY_ENDED":
            raise DeliveryEnded(str(refused)) from e
        cap = refused_cap(refused)
        if cap is not None and cap < self.max_plan_objects:
            log.warning("the state service takes plans of at most %d objects (%d "
                        "asked); planning to that", cap, self.max_plan_objects)
            self.max_plan_objects = cap
            return stale
        entries = entries_cap(refused)
        if entries is not None and entries < self.max_plan_entries:
            log.warning("the state service takes at most %d entries per field of a "
                        "request (%s refused); planning to that", entries,
                        refused.metadata.get("field", "?"))
            self.max_plan_entries = entries
            return stale
        # BROKER_UNREACHABLE: nothing was written; the broker may be
        # failing over, so try again shortly, as for a stale plan.
        if refused.reason not in ("PLAN_STALE", "BROKER_UNREACHABLE"):
            raise e
        self.stats.stale += 1
        stale += 1
        if stale >= self.config.plan_retries:
            raise PlanRefused(f"plan stale {stale} times") from e
        if refused.reason == "BROKER_UNREACHABLE":
            await asyncio.sleep(0.5 * stale)
            return stale
        index = int(refused.metadata.get("index", "0") or 0)
        await self.view.wait_past(index, within=0.5)
        return stale

    async def _partial(self, ev: evaluation_pb2.Evaluation, resp: state_pb2.SubmitPlanResponse,
                       partial: Attempts) -> bool:
        """A plan committed in part: True when it may be planned again (the
        view then has caught up with the refresh index)."""
        self.stats.partial += 1
        self.stats.refused += sum(len(r.placement_ids) for r in resp.refused)
        log.info("evaluation %s: plan committed in part (%s); refresh at %d", ev.id,
                 "; ".join(f"{r.node_id}: {r.reason}" for r in resp.refused),
                 resp.refresh_index)
        if not partial.after(progress=bool(resp.placed or resp.updated)):
            return False
        # Nomad waits for a snapshot at the refresh index: the view (the
        # nodes' usage) must include what the other plans committed.
        if not await self.view.wait_past(resp.refresh_index, within=5.0):
            self.view.reload(f"not at the refresh index {resp.refresh_index} after 5s")
            await self.view.wait_past(resp.refresh_index, within=5.0)
        return True

    async def snapshot(self, ev: evaluation_pb2.Evaluation) -> Snapshot:
        """The evaluation's job reads (:meth:`read_job`) and the view's nodes."""
        return self._snapshot(ev, await self.read_job(ev))

    async def read_job(self, ev: evaluation_pb2.Evaluation) -> JobReads:
        """The evaluation's job, versions, deployment, allocations (:mod:`.job_reads`)."""
        with self.stats.times.step("read"):
            return await read_job(self.state, self.job_allocs, ev)

    def _snapshot(self, ev: evaluation_pb2.Evaluation, reads: JobReads) -> Snapshot:
        """The job's reads and the view's nodes and usage as they are now."""
        got = reads.snapshot
        return Snapshot(ev.namespace or "default", ev.job_id,
                        got.job if got.HasField("job") else None,
                        {v.version: v for v in got.versions},
                        got.deployment if got.HasField("deployment") else None,
                        reads.allocs, self.view.node_set(),
                        dict(self.view.used), eval_id=ev.id, now=time.time())

    async def submit(self, ev: evaluation_pb2.Evaluation, snap: Snapshot, plan: Plan,
                     token: str = "") -> state_pb2.SubmitPlanResponse:
        """Submit ``plan``, its placements reserved in the view meanwhile
        (the other loops plan around them) and released where not committed."""
        nodes = node_set(snap.nodes).by_id
        self.stats.plans += 1
        self.view.reserve(plan.placements)
        try:
            with self.stats.times.step("submit"):
                resp = await self.state.SubmitPlan(state_pb2.SubmitPlanRequest(
                    eval_id=ev.id, namespace=snap.namespace, job_id=snap.job_id,
                    job_index=snap.job.modify_index if snap.job is not None else 0,
                    alloc_indexes={a.id: a.modify_index for a in plan.updates},
                    job_allocs=job_alloc_set(snap.allocs),
                    node_indexes={n: nodes[n].modify_index for n in plan.node_ids()},
                    placements=plan.placements, updates=plan.updates,
                    evaluations=plan.evaluations, eval_token=token), timeout=30)
        except BaseException:
            self.view.release(plan.placements)
            raise
        refused = {i for r in resp.refused for i in r.placement_ids}
        self.view.release(a for a in plan.placements if a.id in refused)
        self.stats.placed += resp.placed
        return resp

    def _follow_ups(self, ev: evaluation_pb2.Evaluation, snap: Snapshot, plan: Plan,
                    index: int) -> list[evaluation_pb2.Evaluation]:
        follow = follow_ups(ev, snap, plan, index, _new_id)
        self.stats.blocked += sum(1 for f in follow if f.status == BLOCKED)
        return follow


def _new_id() -> str:
    return str(uuid.uuid4())


def _describe(e: BaseException) -> str:
    if isinstance(e, grpc.RpcError) and hasattr(e, "details"):
        status = remote_status(e)
        return f"{status.details} ({status.reason or status.code})"
    return str(e)

/**
 * The worker's async shell: dequeue (batched), plan, submit, ack. A port of
 * the Python reference worker's loop (drover.worker.loop; its module doc
 * states the protocol):
 *
 * - Dequeue up to `batch` evaluations (one per job); wait for the view to
 *   pass each one's wait_index (`snapshotWaitSec` at most, Nomad's
 *   raftSyncLimit: a view that does not get there in time means a Nack,
 *   never a plan on older state), read the job's snapshot
 *   (GetJobSnapshot, paging its allocations when incomplete; the next
 *   evaluation's read goes ahead while one is planned), plan, SubmitPlan
 *   with the delivery's eval_token and the compares (job, allocation and
 *   node indexes);
 * - PLAN_STALE: plan again on fresh reads after the view passed the index
 *   the refusal names, up to `planRetries` times, then Nack;
 *   BROKER_UNREACHABLE: the same after a short pause; PLAN_DELIVERY_ENDED:
 *   the evaluation is no longer this worker's (no Ack, no Nack); a size
 *   refusal (INVALID_ARGUMENT with `max_objects`): plan to that cap from
 *   then on; any other failure (UNAVAILABLE, OUTCOME_UNKNOWN included):
 *   Nack (the broker redelivers; a plan that did commit is seen then);
 * - a partial commit (`refused` nodes): plan again once the view passed
 *   `refresh_index`, by Nomad's retry rule (./attempts), else a blocked
 *   max-plan-attempts evaluation;
 * - a capped plan (`more`) is planned again at once on the committed part,
 *   up to `planRounds` plans, then a plan-continuation follow-up;
 * - every successful evaluation of a batch is acked in one AckBatch, with
 *   its follow-up: a blocked evaluation (what it needs: ./blocked) when
 *   allocations fit nowhere; an AckBatch that ends UNAVAILABLE (outcome
 *   unknown) is sent again as it was, a few times (the Python worker
 *   leaves the evaluations to their nack timeout instead);
 * - while a batch is processed, the deliveries not yet acked or nacked have
 *   their nack timers restarted (OutstandingReset) every
 *   `outstandingResetSec`, so a long batch does not outlive the broker's
 *   nack timeout (the Python worker does not: its batches are short).
 */
import { randomUUID } from "node:crypto";
import type { DequeueResponse } from "@drover/api/drover/broker/v1/broker";
import type { AckRequest } from "@drover/api/drover/broker/v1/broker";
import type { JobSnapshot, SubmitPlanResponse } from "@drover/api/drover/state/v1/state";
import { Attempts, attemptLimit, DESCRIPTION, TRIGGER } from "./attempts";
import { blockedNeed } from "./blocked";
import { computePlan } from "./planner";
import { planObjects, refusedCap } from "./planSize";
import { seeded, type Rng } from "./rng";
import type { Connection } from "./rpc";
import type { Plan, Snapshot } from "./snapshot";
import { describe, isRpcError, remoteStatus } from "./status";
import { Evaluation, EvaluationStatus, type Allocation } from "./types";
import { ClusterView } from "./view";

export interface WorkerConfig {
  /** Scheduler types dequeued (Nomad's enabled_schedulers). */
  schedulers: string[];
  /** Scheduling loops run side by side (Nomad's num_schedulers). */
  numSchedulers: number;
  batch: number;
  dequeueTimeoutSec: number;
  /** How long the view may take to reach an evaluation's wait index before the evaluation is nacked. */
  snapshotWaitSec: number;
  planRetries: number;
  /** Plans one delivery may submit when capped before a plan-continuation follow-up. */
  planRounds: number;
  /** etcd's --max-txn-ops as this worker is told it. */
  maxTxnOps: number;
  seed: number | null;
  /** How often deliveries still being processed restart their nack timers (the broker's default timeout: 60 s). */
  outstandingResetSec: number;
}

export const DEFAULTS: WorkerConfig = {
  schedulers: ["service", "batch", "system"], numSchedulers: 1, batch: 16, dequeueTimeoutSec: 5, snapshotWaitSec: 5,
  planRetries: 5, planRounds: 16, maxTxnOps: 128, seed: null, outstandingResetSec: 15,
};

export interface WorkerStats {
  evaluations: number;
  plans: number;
  placed: number;
  stale: number;
  partial: number;
  refused: number;
  nacked: number;
  blocked: number;
}

/** The plan kept being stale: give the evaluation back. */
class PlanRefused extends Error {}
/** The view did not reach the evaluation's wait index in time: give it back rather than plan on older state. */
class ViewBehind extends Error {}
/** The state service refused the plan: this worker's delivery of the evaluation ended. */
class DeliveryEnded extends Error {}

/** AckBatch calls per batch while they end UNAVAILABLE or an ack is answered OUTCOME_UNKNOWN. */
const ACK_TRIES = 3;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Delivery {
  ev: Evaluation;
  token: string;
  waitIndex: bigint;
}

export class Worker {
  readonly view: ClusterView;
  readonly stats: WorkerStats = { evaluations: 0, plans: 0, placed: 0, stale: 0, partial: 0, refused: 0, nacked: 0, blocked: 0 };
  /** What one plan may write; lowered when a state replica says less. */
  maxPlanObjects: number;
  private readonly rng: Rng;
  private stopped = false;

  constructor(private readonly conn: Connection, readonly config: WorkerConfig,
    private readonly log: (msg: string) => void = (m) => console.log(`worker ${m}`)) {
    this.view = new ClusterView(conn, (m) => this.log(`WARNING ${m}`));
    this.rng = seeded(config.seed ?? Math.floor(Math.random() * 2 ** 32));
    this.maxPlanObjects = planObjects(config.maxTxnOps);
  }

  /** The view, and numSchedulers scheduling loops over it, until stop(). */
  async run(): Promise<void> {
    const view = this.view.run();
    await Promise.race([this.view.ready, view]);
    const loops = Array.from({ length: Math.max(1, this.config.numSchedulers) }, () => this.schedule());
    await Promise.all(loops);
    await view;
  }

  stop(): void {
    this.stopped = true;
    this.view.stop();
  }

  private async schedule(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.step();
      } catch (err) {
        if (this.stopped) return;
        this.log(`WARNING ${describe(err)}`);
        await sleep(500);
      }
    }
  }

  /** One Dequeue, its evaluations processed and acked; how many. */
  async step(): Promise<number> {
    const ms = Math.round(this.config.dequeueTimeoutSec * 1000);
    const resp: DequeueResponse = await this.conn.dequeue({
      schedulers: this.config.schedulers, timeout: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 },
      maxEvaluations: this.config.batch,
    }, this.config.dequeueTimeoutSec + 10);
    if (!resp.evaluation?.id) return 0;
    const deliveries: Delivery[] = [{ ev: resp.evaluation, token: resp.token, waitIndex: resp.waitIndex }];
    for (const d of resp.additional) {
      if (d.evaluation) deliveries.push({ ev: d.evaluation, token: d.token, waitIndex: d.waitIndex });
    }
    const acks: AckRequest[] = [];
    const outstanding = new Set(deliveries);
    const keepAlive = setInterval(() => this.resetOutstanding(outstanding), this.config.outstandingResetSec * 1000);
    try {
      let ahead: Promise<JobSnapshot> | null = null;
      for (let i = 0; i < deliveries.length; i++) {
        const reads: Promise<JobSnapshot> = ahead ?? this.readAhead(deliveries[i].ev);
        ahead = i + 1 < deliveries.length ? this.readAhead(deliveries[i + 1].ev) : null;
        const ack = await this.processOne(deliveries[i], reads);
        if (!ack.length) outstanding.delete(deliveries[i]); // nacked, or no longer ours
        acks.push(...ack);
      }
      if (acks.length) await this.ack(acks);
    } finally {
      clearInterval(keepAlive);
    }
    return deliveries.length;
  }

  /**
   * One AckBatch; sent again as it was (the same follow-up ids) after
   * UNAVAILABLE, and the acks answered OUTCOME_UNKNOWN sent again in one more
   * call (docs/worker-protocol.md: one that landed then says NOT_OUTSTANDING,
   * EVALUATION_CHANGED or EVALUATION_EXISTS: done). Still unknown after the
   * last try, a delivery runs out its nack timer and is delivered again.
   */
  private async ack(acks: AckRequest[]): Promise<void> {
    let todo = acks;
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await this.conn.ackBatch({ acks: todo }, 30);
        const unknown = new Set<string>();
        for (const o of out.outcomes) {
          if (!o.code) continue;
          const again = o.reason === "OUTCOME_UNKNOWN" && attempt < ACK_TRIES && !this.stopped;
          if (again) unknown.add(o.evalId);
          this.log(`${attempt > 1 ? "INFO" : "WARNING"} ack ${o.evalId}: ${o.message} (${o.reason})` +
            (again ? "; sending it again" : ""));
        }
        if (unknown.size === 0) return;
        todo = todo.filter((a) => unknown.has(a.evalId));
      } catch (err) {
        if (remoteStatus(err).code !== "UNAVAILABLE" || attempt >= ACK_TRIES || this.stopped) throw err;
        this.log(`WARNING ack: ${describe(err)}; sending it again`);
      }
      await sleep(500 * attempt);
    }
  }

  /** Restart the nack timers of deliveries still being processed (Nomad's OutstandingReset). */
  private resetOutstanding(outstanding: Set<Delivery>): void {
    for (const d of outstanding) {
      this.conn.outstandingReset({ evalId: d.ev.id, token: d.token }, 10).catch((err) => {
        outstanding.delete(d); // the delivery ended: its plan will say so (PLAN_DELIVERY_ENDED)
        this.log(`WARNING outstanding reset ${d.ev.id}: ${describe(err)}`);
      });
    }
  }

  /** One delivery processed: its ack, or none (nacked, or no longer ours). */
  private async processOne(d: Delivery, reads: Promise<JobSnapshot>): Promise<AckRequest[]> {
    this.stats.evaluations += 1;
    let followUps: Evaluation[];
    try {
      followUps = await this.process(d.ev, d.waitIndex, d.token, reads);
    } catch (err) {
      if (err instanceof DeliveryEnded) {
        this.log(`WARNING evaluation ${d.ev.id}: ${err.message}; not ours any more`);
        return [];
      }
      this.log(`WARNING evaluation ${d.ev.id}: ${err instanceof PlanRefused || err instanceof ViewBehind || isRpcError(err) ? describe(err)
        : `planning failed: ${(err as Error)?.stack ?? err}`}; nack`);
      this.stats.nacked += 1;
      try {
        await this.conn.nack({ evalId: d.ev.id, token: d.token }, 10);
      } catch (ne) {
        this.log(`WARNING nack ${d.ev.id}: ${describe(ne)}`);
      }
      return [];
    }
    return [{ evalId: d.ev.id, token: d.token, status: EvaluationStatus.EVALUATION_STATUS_COMPLETE,
      statusDescription: "", followUps }];
  }

  /** Plan and submit until accepted; the follow-up evaluations to ack with. */
  async process(ev: Evaluation, waitIndex: bigint, token: string, reads: Promise<JobSnapshot> | null): Promise<Evaluation[]> {
    if (!await this.view.waitPast(waitIndex, this.config.snapshotWaitSec)) {
      this.view.reload(`not at the wait index ${waitIndex}`);
      throw new ViewBehind(`the view is at index ${this.view.index}, the evaluation needs ${waitIndex} `
        + `(waited ${this.config.snapshotWaitSec}s)`);
    }
    const partial = new Attempts(attemptLimit(ev.type));
    let stale = 0;
    let rounds = 0;
    for (;;) {
      let index = this.view.index; // what the plan is computed at (nodes may lag)
      let got: JobSnapshot;
      if (reads !== null) {
        got = await reads.catch(() => this.readJob(ev));
        reads = null;
      } else {
        got = await this.readJob(ev);
      }
      const snap = this.snapshot(ev, got);
      const plan = computePlan(snap, { rng: this.rng, newId: randomUUID, maxOps: this.maxPlanObjects });
      if (plan.empty) return this.followUpsWithNeeds(ev, snap, plan, index);
      let resp: SubmitPlanResponse;
      try {
        resp = await this.submit(ev, snap, plan, token);
      } catch (err) {
        if (!isRpcError(err)) throw err;
        const refused = remoteStatus(err);
        if (refused.reason === "PLAN_DELIVERY_ENDED") throw new DeliveryEnded(`${refused.details} (${refused.reason})`);
        const cap = refusedCap(refused.code, refused.metadata);
        if (cap !== null && cap < this.maxPlanObjects) {
          this.log(`WARNING the state service takes plans of at most ${cap} objects (${this.maxPlanObjects} asked); planning to that`);
          this.maxPlanObjects = cap;
          continue;
        }
        // BROKER_UNREACHABLE: nothing was written; the broker may be failing over.
        if (refused.reason !== "PLAN_STALE" && refused.reason !== "BROKER_UNREACHABLE") throw err;
        this.stats.stale += 1;
        stale += 1;
        if (stale >= this.config.planRetries) throw new PlanRefused(`plan stale ${stale} times`);
        if (refused.reason === "BROKER_UNREACHABLE") {
          await sleep(500 * stale);
          continue;
        }
        index = /^\d+$/.test(refused.metadata.index ?? "") ? BigInt(refused.metadata.index) : 0n;
        await this.view.waitPast(index, 0.5);
        continue;
      }
      if (!resp.refused.length) {
        rounds += 1;
        if (!plan.more || rounds >= this.config.planRounds) return this.followUpsWithNeeds(ev, snap, plan, index);
        // Capped, all committed: plan the rest now, on a view that has the committed part.
        await this.view.waitPast(resp.index, 1.0);
        continue;
      }
      this.stats.partial += 1;
      this.stats.refused += resp.refused.reduce((n, r) => n + r.placementIds.length, 0);
      this.log(`INFO evaluation ${ev.id}: plan committed in part (${resp.refused.map((r) => `${r.nodeId}: ${r.reason}`)
        .join("; ")}); refresh at ${resp.refreshIndex}`);
      if (!partial.after(resp.placed > 0 || resp.updated > 0)) return [this.conflictBlocked(ev)];
      // Nomad waits for a snapshot at the refresh index: the view must include the other plans.
      if (!await this.view.waitPast(resp.refreshIndex, 5.0)) {
        this.view.reload(`not at the refresh index ${resp.refreshIndex} after 5s`);
        await this.view.waitPast(resp.refreshIndex, 5.0);
      }
    }
  }

  /** readJob started before its turn: a failure is seen (and the read tried again) when it is awaited. */
  private readAhead(ev: Evaluation): Promise<JobSnapshot> {
    const reads = this.readJob(ev);
    reads.catch(() => undefined); // not an unhandled rejection meanwhile
    return reads;
  }

  /** The evaluation's job, its versions, deployment and allocations: one GetJobSnapshot. */
  async readJob(ev: Evaluation): Promise<JobSnapshot> {
    const namespace = ev.namespace || "default";
    const resp = await this.conn.getJobSnapshot({ namespace, id: ev.jobId, allocationsModifiedAfter: 0n }, 30);
    const got = resp.snapshot ?? {
      job: undefined, versions: [], deployment: undefined, allocations: [], allocationsComplete: true,
      allocSet: undefined,
    };
    if (!got.allocationsComplete) {
      got.allocations.push(...await this.allocs(namespace, ev.jobId));
      got.allocationsComplete = true;
    }
    return got;
  }

  private async allocs(namespace: string, jobId: string): Promise<Allocation[]> {
    const out: Allocation[] = [];
    let pageToken = "";
    do {
      const resp = await this.conn.listAllocations({
        namespace, prefix: "", filter: `job_id == "${jobId}"`, orderBy: "", pageSize: 1000, pageToken,
      }, 30);
      out.push(...resp.allocations);
      pageToken = resp.nextPageToken;
    } while (pageToken);
    return out;
  }

  /** The job's reads and the view's nodes and usage as they are now. */
  private snapshot(ev: Evaluation, got: JobSnapshot): Snapshot {
    return {
      namespace: ev.namespace || "default", jobId: ev.jobId, job: got.job ?? null,
      versions: new Map(got.versions.map((v) => [v.version, v])), deployment: got.deployment ?? null,
      allocs: got.allocations, nodes: [...this.view.nodes.values()], nodeUsed: new Map(this.view.used),
      evalId: ev.id, now: Date.now() / 1000,
    };
  }

  /** Submit `plan`, its placements reserved in the view meanwhile and released where not committed. */
  private async submit(ev: Evaluation, snap: Snapshot, plan: Plan, token: string): Promise<SubmitPlanResponse> {
    const nodes = new Map(snap.nodes.map((n) => [n.id, n.modifyIndex]));
    const nodeIndexes: Record<string, bigint> = {};
    for (const id of plan.nodeIds()) nodeIndexes[id] = nodes.get(id) ?? 0n;
    // The job's allocation set as read travels as two numbers (jobAllocs);
    // allocIndexes holds only what the plan updates, so a plan for a job of
    // any size stays within a request's entries cap (docs/worker-protocol.md).
    const read = new Map(snap.allocs.map((a) => [a.id, a.modifyIndex]));
    const allocIndexes: Record<string, bigint> = {};
    for (const a of plan.updates) allocIndexes[a.id] = read.get(a.id) ?? a.modifyIndex;
    let maxCreateIndex = 0n;
    for (const a of snap.allocs) if (a.createIndex > maxCreateIndex) maxCreateIndex = a.createIndex;
    const jobAllocs = { count: snap.allocs.length, maxCreateIndex };
    this.stats.plans += 1;
    this.view.reserve(plan.placements);
    let resp: SubmitPlanResponse;
    try {
      resp = await this.conn.submitPlan({
        evalId: ev.id, namespace: snap.namespace, jobId: snap.jobId, jobIndex: snap.job?.modifyIndex ?? 0n,
        allocIndexes, jobAllocs, nodeIndexes, placements: plan.placements, updates: plan.updates,
        evaluations: plan.evaluations, evalToken: token,
      }, 30);
    } catch (err) {
      this.view.release(plan.placements);
      throw err;
    }
    const refused = new Set(resp.refused.flatMap((r) => r.placementIds));
    this.view.release(plan.placements.filter((a) => refused.has(a.id)));
    this.stats.placed += resp.placed;
    return resp;
  }

  /** The follow-ups; a blocked one records what it needs and the index its plan was computed at. */
  private followUpsWithNeeds(ev: Evaluation, snap: Snapshot, plan: Plan, index: bigint): Evaluation[] {
    const follow = this.followUps(ev, plan);
    for (const f of follow) {
      if (f.status === EvaluationStatus.EVALUATION_STATUS_BLOCKED) blockedNeed(f, snap, plan, index);
    }
    return follow;
  }

  /** Nomad's answer to attempts run out: a blocked evaluation the next capacity change unblocks. */
  private conflictBlocked(ev: Evaluation): Evaluation {
    this.stats.blocked += 1;
    return Evaluation.fromPartial({
      id: randomUUID(), namespace: ev.namespace, priority: ev.priority, type: ev.type, jobId: ev.jobId,
      previousEval: ev.id, deploymentId: ev.deploymentId, triggeredBy: TRIGGER,
      status: EvaluationStatus.EVALUATION_STATUS_BLOCKED, statusDescription: DESCRIPTION,
    });
  }

  private followUps(ev: Evaluation, plan: Plan): Evaluation[] {
    if (!plan.more && !plan.queued.size) return [];
    const blocked = plan.queued.size > 0 && !plan.more;
    if (blocked) this.stats.blocked += 1;
    return [Evaluation.fromPartial({
      id: randomUUID(), namespace: ev.namespace, priority: ev.priority, type: ev.type, jobId: ev.jobId,
      previousEval: ev.id, deploymentId: ev.deploymentId,
      triggeredBy: blocked ? "queued-allocs" : "plan-continuation",
      status: blocked ? EvaluationStatus.EVALUATION_STATUS_BLOCKED : EvaluationStatus.EVALUATION_STATUS_PENDING,
      statusDescription: blocked ? `${plan.queuedTotal()} allocations fit no node` : "the plan was capped; continue",
    })];
  }
}

import { test } from "node:test";
import assert from "node:assert/strict";
import { AllocClientStatus, AllocDesiredStatus } from "@drover/api/drover/types/v1/allocation";
import { DeploymentStatus } from "@drover/api/drover/types/v1/deployment";
import { JobType } from "@drover/api/drover/types/v1/job";
import * as failed from "../src/failed";
import { penaltyNodes } from "../src/penalty";
import { computePlan } from "../src/planner";
import * as r from "../src/reschedule";
import { deployment, ids, job, running, snap } from "./fixtures";

test("a block's set fields merge over the job type's default", () => {
  assert.deepEqual(r.resolve(JobType.JOB_TYPE_SERVICE, undefined), r.SERVICE_DEFAULT);
  assert.equal(r.resolve(JobType.JOB_TYPE_SYSTEM, { attempts: 3 }), null);
  const p = r.resolve(JobType.JOB_TYPE_BATCH, { attempts: 3, delay: { seconds: 10n, nanos: 0 } })!;
  assert.deepEqual([p.attempts, p.delay, p.interval, p.delayFunction], [3, 10, 86400, "constant"]);
});

test("exponential delays double and cap at max_delay, then reset after a long run", () => {
  const p = { ...r.SERVICE_DEFAULT, delay: 30, maxDelay: 100 };
  const ev = (time: number, delay: number): r.Event => ({ time, prevAllocId: "", prevNodeId: "", delay });
  assert.equal(r.nextDelay(p, [], 0), 30);
  assert.equal(r.nextDelay(p, [ev(0, 30)], 10), 60);
  assert.equal(r.nextDelay(p, [ev(0, 60)], 10), 100);
  assert.equal(r.nextDelay(p, [ev(0, 100)], 500), 30);
});

test("fibonacci adds the last two delays", () => {
  const p = { ...r.SERVICE_DEFAULT, delayFunction: r.FIBONACCI, delay: 5, maxDelay: 1000 };
  const ev = (delay: number): r.Event => ({ time: 0, prevAllocId: "", prevNodeId: "", delay });
  assert.equal(r.nextDelay(p, [ev(5)], 1), 5);
  assert.equal(r.nextDelay(p, [ev(5), ev(5)], 1), 10);
  assert.equal(r.nextDelay(p, [ev(5), ev(10)], 1), 15);
});

test("a limited policy allows `attempts` reschedules within its interval", () => {
  const p = r.BATCH_DEFAULT;
  const ev: r.Event = { time: 100, prevAllocId: "a", prevNodeId: "n", delay: 5 };
  assert.ok(r.eligible(p, [], 200));
  assert.ok(!r.eligible(p, [ev], 200));
  assert.ok(r.eligible(p, [ev], 100 + 86400 + 1));
});

test("follow-ups due within 5 s of each other share one evaluation", () => {
  assert.deepEqual(r.batchLater([[20, "c"], [10, "a"], [14, "b"]]), [[10, ["a", "b"]], [20, ["c"]]]);
});

function failedAlloc(finishedAt: number, followup = "") {
  const a = running(job({ count: 1 }), 1, { status: AllocClientStatus.ALLOC_CLIENT_STATUS_FAILED })[0];
  return { ...a, finishedAt: r.timestamp(finishedAt), followupEvalId: followup };
}

test("a failed allocation due now is replaced, away from its node, carrying its tracker", () => {
  const j = job({ count: 1 });
  const a = failedAlloc(1000 - 31);
  const plan = computePlan(snap(j, { allocs: [a], now: 1000 }), { newId: ids() });
  assert.equal(plan.placements.length, 1);
  const fresh = plan.placements[0];
  assert.equal(fresh.previousAllocation, a.id);
  assert.notEqual(fresh.nodeId, a.nodeId);
  assert.equal(fresh.rescheduleTracker?.events.length, 1);
  assert.deepEqual(fresh.rescheduleTracker?.events[0].delay, { seconds: 30n, nanos: 0 });
  assert.equal(plan.updates[0].desiredStatus, AllocDesiredStatus.ALLOC_DESIRED_STATUS_STOP);
  assert.equal(plan.updates[0].desiredDescription, failed.STOP_DESCRIPTION);
  assert.equal(plan.updates[0].nextAllocation, fresh.id);
});

test("a failed allocation not yet due gets an alloc-failure follow-up evaluation due then", () => {
  const j = job({ count: 1 });
  const a = failedAlloc(1000 - 10);
  const plan = computePlan(snap(j, { allocs: [a], now: 1000 }), { newId: ids() });
  assert.equal(plan.placements.length, 0);
  assert.equal(plan.evaluations.length, 1);
  const ev = plan.evaluations[0];
  assert.equal(ev.triggeredBy, failed.TRIGGER);
  assert.equal(ev.type, "service");
  assert.equal(r.tsSecs(ev.waitUntil), 1020);
  assert.deepEqual(plan.updates.map((u) => [u.id, u.followupEvalId]), [[a.id, ev.id]]);
  // that follow-up, when it comes, replaces it
  const later = computePlan(snap(j, { allocs: [{ ...a, followupEvalId: ev.id }], now: 1020, evalId: ev.id }),
    { newId: ids() });
  assert.equal(later.placements.length, 1);
});

/** A running allocation of d1 the deployment watcher marked to reschedule (unhealthy). */
function marked(i: number, node: string, trackerNodes: string[] = []) {
  const a = running(job({ version: 1n }), 1, { start: i, node, dep: "d1", healthy: false })[0];
  return { ...a, desiredTransition: { reschedule: true },
    rescheduleTracker: { events: trackerNodes.map((n, k) => ({ rescheduleTime: r.timestamp(1000 - 100 + k),
      prevAllocId: `p${k}`, prevNodeId: n, delay: { seconds: 30n, nanos: 0 } })) } };
}

test("a running allocation marked to reschedule is kept, whatever its policy and deployment", () => {
  // Nomad's shouldFilter: a running allocation is untainted, marked or not; the
  // progress deadline decides the deployment (was: stopped and replaced at once)
  const j = job({ version: 1n, count: 3 });
  const ok = running(j, 2, { dep: "d1", healthy: true });
  for (const tracker of [[], ["n1"], ["n1", "n2"]]) {
    for (const status of [DeploymentStatus.DEPLOYMENT_STATUS_RUNNING, DeploymentStatus.DEPLOYMENT_STATUS_FAILED]) {
      const plan = computePlan(snap(j, { allocs: [...ok, marked(2, "n2", tracker)], dep: deployment(1n, 0, false, status),
        now: 1000 }), { newId: ids() });
      assert.ok(plan.empty, `${tracker} ${status}`);
    }
  }
});

test("a marked unhealthy one is in flight: it counts against max_parallel", () => {
  const v0 = job({ version: 0n, count: 2 });
  const v1 = job({ version: 1n, count: 2, maxParallel: 1, image: "v2" });
  const plan = computePlan(snap(v1, { allocs: [running(v0, 1)[0], marked(1, "n1")], dep: deployment(1n),
    versions: [v0], now: 1000 }), { newId: ids() });
  assert.ok(plan.empty);
});

test("penalty nodes: a failed one's node and its tracker's, never a running one's own node", () => {
  const f = { ...failedAlloc(900), nodeId: "n0", rescheduleTracker: marked(0, "n0", ["n1", ""]).rescheduleTracker };
  assert.deepEqual([...penaltyNodes(f)].sort(), ["n0", "n1"]);
  assert.deepEqual([...penaltyNodes(marked(1, "n2"))], []); // running: kept, not replaced
  assert.deepEqual([...penaltyNodes(marked(2, "n2", ["n1"]))], ["n1"]);
});

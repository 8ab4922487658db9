import { test } from "node:test";
import assert from "node:assert/strict";
import { AllocDesiredStatus } from "@drover/api/drover/types/v1/allocation";
import { JobType } from "@drover/api/drover/types/v1/job";
import { NodeSchedulingEligibility } from "@drover/api/drover/types/v1/node";
import { computePlan } from "../src/planner";
import { ids, job, nodes, running, snap } from "./fixtures";

const system = (o: Parameters<typeof job>[0] = {}) => job({ ...o, type: JobType.JOB_TYPE_SYSTEM });

test("a system job gets one allocation on every eligible node", () => {
  const ns = nodes(4);
  ns[3].schedulingEligibility = NodeSchedulingEligibility.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE;
  const plan = computePlan(snap(system(), { nodes: ns }), { newId: ids() });
  assert.deepEqual(plan.placements.map((a) => a.nodeId).sort(), ["n0", "n1", "n2"]);
  assert.ok(plan.placements.every((a) => a.name === "web.g[0]"));
});

test("a node that joins gets its allocation; the covered ones are left alone", () => {
  const j = system();
  const allocs = [...running(j, 1, { node: "n0" }), ...running(j, 1, { node: "n1", start: 1 })];
  const plan = computePlan(snap(j, { nodes: nodes(3), allocs }), { newId: ids() });
  assert.deepEqual(plan.placements.map((a) => a.nodeId), ["n2"]);
  assert.equal(plan.updates.length, 0);
});

test("a node without room queues the group there", () => {
  const plan = computePlan(snap(system({ cpu: 2000 }), { nodes: nodes(2) }), { newId: ids() });
  assert.equal(plan.placements.length, 0);
  assert.equal(plan.queued.get("g"), 2);
});

test("a changed system job is replaced max_parallel nodes at a time", () => {
  const v0 = system({ version: 0n });
  const v1 = system({ version: 1n, image: "v2", maxParallel: 1 });
  const allocs = [...running(v0, 1, { node: "n0" }), ...running(v0, 1, { node: "n1", start: 1 })];
  const plan = computePlan(snap(v1, { nodes: nodes(2), allocs, versions: [v0] }), { newId: ids() });
  assert.equal(plan.placements.length, 1);
  assert.equal(plan.updates[0].desiredStatus, AllocDesiredStatus.ALLOC_DESIRED_STATUS_STOP);
  assert.ok(plan.more);
});

test("a replacement with no room left in the plan takes back nothing else", () => {
  const v0 = system({ version: 0n });
  const v1 = system({ version: 1n, image: "v2" });
  const ns = nodes(2);
  ns[0].datacenter = "dc2";
  const allocs = [...running(v0, 1, { node: "n0" }), ...running(v0, 1, { node: "n1", start: 1 })];
  const plan = computePlan(snap(v1, { nodes: ns, allocs, versions: [v0] }), { newId: ids(), maxOps: 2 });
  assert.deepEqual(plan.updates.map((a) => [a.nodeId, a.desiredStatus]), [["n0", AllocDesiredStatus.ALLOC_DESIRED_STATUS_STOP]]);
  assert.equal(plan.placements.length, 0);
  assert.ok(plan.more);
});

test("an alloc stop (Nomad's Alloc.Stop) is replaced on its node and linked", () => {
  const j = system();
  const allocs = [...running(j, 1, { node: "n0" }), ...running(j, 1, { node: "n1", start: 1 })];
  allocs[0].desiredTransition = { migrate: true };
  const plan = computePlan(snap(j, { nodes: nodes(2), allocs }), { newId: ids() });
  assert.equal(plan.updates.length, 1);
  assert.equal(plan.placements.length, 1);
  const [old, neu] = [plan.updates[0], plan.placements[0]];
  assert.equal(old.id, allocs[0].id);
  assert.equal(old.desiredDescription, "alloc is being migrated");
  assert.equal(neu.nodeId, "n0");
  assert.equal(neu.previousAllocation, old.id);
  assert.equal(old.nextAllocation, neu.id);
});

test("an alloc stop of a batch allocation is replaced and linked; a drained one is not", () => {
  const j = job({ type: JobType.JOB_TYPE_BATCH, count: 2 });
  const allocs = running(j, 2);
  allocs[0].desiredTransition = { migrate: true };
  const plan = computePlan(snap(j, { nodes: nodes(3), allocs }), { newId: ids() });
  assert.equal(plan.placements[0].previousAllocation, allocs[0].id);
  assert.equal(plan.updates[0].nextAllocation, plan.placements[0].id);
  allocs[0].desiredTransition = { migrate: true, migrateDisablePlacement: true };
  const drained = computePlan(snap(j, { nodes: nodes(3), allocs }), { newId: ids() });
  assert.deepEqual(drained.updates.map((a) => a.id), [allocs[0].id]);
  assert.equal(drained.placements.length, 0);
});

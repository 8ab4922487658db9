import { test } from "node:test";
import assert from "node:assert/strict";
import { AllocClientStatus, AllocDesiredStatus } from "@drover/api/drover/types/v1/allocation";
import { DeploymentStatus } from "@drover/api/drover/types/v1/deployment";
import { NodeStatus } from "@drover/api/drover/types/v1/node";
import { canaryNames, computePlan } from "../src/planner";
import { deployment, ids, job, nodes, running, snap } from "./fixtures";

const STOP = AllocDesiredStatus.ALLOC_DESIRED_STATUS_STOP;

test("a first version places every allocation, named by index, in its deployment", () => {
  const plan = computePlan(snap(job({ count: 3 }), { dep: deployment(0n) }), { newId: ids() });
  assert.equal(plan.placements.length, 3);
  assert.equal(plan.updates.length, 0);
  assert.deepEqual(plan.placements.map((a) => a.name).sort(), ["web.g[0]", "web.g[1]", "web.g[2]"]);
  assert.deepEqual(new Set(plan.placements.map((a) => a.deploymentId)), new Set(["d0"]));
  assert.deepEqual(plan.placements[0].resources, { cpu: 100, memoryMb: 300 });
});

test("binpacking fills the fuller node first (Nomad's best fit)", () => {
  const s = snap(job({ count: 1 }), { nodes: nodes(2) });
  const plan = computePlan({ ...s, nodeUsed: new Map([["n1", { cpu: 500, memoryMb: 2000 }]]) }, { newId: ids() });
  assert.equal(plan.placements[0].nodeId, "n1");
});

test("spread: a group's second allocation goes to another node when both fit alike", () => {
  const plan = computePlan(snap(job({ count: 2 }), { nodes: nodes(2) }), { newId: ids() });
  assert.deepEqual(plan.placements.map((a) => a.nodeId).sort(), ["n0", "n1"]);
});

test("a job that fits nowhere is queued, not placed", () => {
  const plan = computePlan(snap(job({ count: 2, cpu: 5000 })), { newId: ids() });
  assert.equal(plan.placements.length, 0);
  assert.equal(plan.queued.get("g"), 2);
});

test("a destructive update replaces at most max_parallel at a time, less the unhealthy new ones", () => {
  const v0 = job({ version: 0n, count: 4 });
  const v1 = job({ version: 1n, count: 4, maxParallel: 2, image: "v2" });
  const plan = computePlan(snap(v1, { allocs: running(v0, 4), dep: deployment(1n), versions: [v0] }), { newId: ids() });
  assert.equal(plan.placements.length, 2);
  assert.equal(plan.updates.filter((a) => a.desiredStatus === STOP).length, 2);
  assert.deepEqual(plan.placements.map((a) => a.previousAllocation), ["v0-0", "v0-1"]);
  // two of the new version in flight, not healthy: no more this round
  const flight = running(v1, 2, { dep: "d1" }).map((a) => ({ ...a, deploymentStatus: undefined }));
  const next = computePlan(snap(v1, { allocs: [...running(v0, 2, { start: 2 }), ...flight], dep: deployment(1n),
    versions: [v0] }), { newId: ids() });
  assert.equal(next.placements.length, 0);
  assert.equal(next.updates.length, 0);
});

test("an unchanged task group is updated in place", () => {
  const v0 = job({ version: 0n, count: 2 });
  const v1 = job({ version: 1n, count: 2 });
  const plan = computePlan(snap(v1, { allocs: running(v0, 2), versions: [v0] }), { newId: ids() });
  assert.equal(plan.placements.length, 0);
  assert.deepEqual(plan.updates.map((a) => [a.jobVersion, a.desiredStatus]), [[1n, AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN],
    [1n, AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN]]);
});

test("canaries first, the old allocations serve until promotion; then the rollout", () => {
  const v0 = job({ version: 0n, count: 3 });
  const v1 = job({ version: 1n, count: 3, canary: 1, image: "v2" });
  const old = running(v0, 3);
  const plan = computePlan(snap(v1, { allocs: old, dep: deployment(1n, 1), versions: [v0] }), { newId: ids() });
  assert.equal(plan.placements.length, 1);
  assert.equal(plan.placements[0].deploymentStatus?.canary, true);
  assert.equal(plan.placements[0].name, "web.g[0]"); // the index it replaces (Nomad's NextCanaries)
  assert.equal(plan.updates.length, 0);
  // promoted, the canary healthy: the old one sharing its name is the surplus stopped,
  // one other old one replaced (max_parallel 1) under its own name
  const canary = { ...plan.placements[0], clientStatus: AllocClientStatus.ALLOC_CLIENT_STATUS_RUNNING,
    deploymentStatus: { canary: true, healthy: true, modifyIndex: 0n } };
  const after = computePlan(snap(v1, { allocs: [...old, canary], dep: deployment(1n, 1, true), versions: [v0] }),
    { newId: ids() });
  const stops = after.updates.filter((a) => a.desiredStatus === STOP).map((a) => a.id).sort();
  assert.deepEqual(stops, ["v0-0", "v0-1"]);
  assert.deepEqual(after.placements.map((a) => [a.name, a.previousAllocation]), [["web.g[1]", "v0-1"]]);
});

test("canaries reuse the indexes being replaced, lowest first, then free ones", () => {
  const v0 = job({ version: 0n, count: 3 });
  const old = running(v0, 3);
  const names = (want: number, allocs = old) => computePlan(snap(job({ version: 1n, count: 3, canary: want, image: "v2" }),
    { allocs, dep: deployment(1n, want), versions: [v0] }), { newId: ids() }).placements
    .map((a) => [a.name, a.deploymentStatus?.canary]);
  assert.deepEqual(names(1), [["web.g[0]", true]]);
  assert.deepEqual(names(3), [["web.g[0]", true], ["web.g[1]", true], ["web.g[2]", true]]);
  assert.deepEqual(names(4), [["web.g[0]", true], ["web.g[1]", true], ["web.g[2]", true], ["web.g[3]", true]]);
  // a second canary (the first still there) takes the next index being replaced
  const first = { ...running(job({ version: 1n }), 1, { dep: "d1" })[0],
    deploymentStatus: { canary: true, modifyIndex: 0n } };
  assert.deepEqual(names(2, [...old, first]), [["web.g[1]", true]]);
  // an old one above the count is no canary's name
  const four = running(v0, 4);
  assert.deepEqual(canaryNames(2, 1, four, [], () => 9), [0, 9]);
});

test("after promotion no two live allocations share a name", () => {
  const v0 = job({ version: 0n, count: 3 });
  const v1 = job({ version: 1n, count: 3, canary: 2, maxParallel: 3, image: "v2" });
  const old = running(v0, 3);
  const canaries = computePlan(snap(v1, { allocs: old, dep: deployment(1n, 2), versions: [v0] }), { newId: ids() })
    .placements.map((a) => ({ ...a, clientStatus: AllocClientStatus.ALLOC_CLIENT_STATUS_RUNNING,
      deploymentStatus: { canary: true, healthy: true, modifyIndex: 0n } }));
  const after = computePlan(snap(v1, { allocs: [...old, ...canaries], dep: deployment(1n, 2, true),
    versions: [v0] }), { newId: ids() });
  const stopped = new Set(after.updates.filter((a) => a.desiredStatus === STOP).map((a) => a.id));
  assert.ok(stopped.has("v0-0") && stopped.has("v0-1"), [...stopped].join());
  const live = [...old, ...canaries, ...after.placements].filter((a) => !stopped.has(a.id)).map((a) => a.name);
  assert.equal(live.length, 3);
  assert.equal(new Set(live).size, live.length, live.join());
});

test("a failed deployment's un-promoted canaries are stopped", () => {
  const v1 = job({ version: 1n, count: 1, canary: 1, image: "v2" });
  const canary = running(v1, 1, { dep: "d1" }).map((a) => ({ ...a, deploymentStatus: { canary: true, modifyIndex: 0n } }));
  const plan = computePlan(snap(v1, { allocs: canary, dep: deployment(1n, 1, false, DeploymentStatus.DEPLOYMENT_STATUS_FAILED) }),
    { newId: ids() });
  assert.deepEqual(plan.updates.map((a) => [a.id, a.desiredStatus]), [["v1-0", STOP]]);
});

test("lost allocations (their node down) are stopped and replaced on a ready node", () => {
  const j = job({ count: 2 });
  const ns = nodes(3);
  ns[0].status = NodeStatus.NODE_STATUS_DOWN;
  const plan = computePlan(snap(j, { allocs: running(j, 2, { node: "n0" }), nodes: ns }), { newId: ids() });
  assert.equal(plan.updates.filter((a) => a.desiredStatus === STOP).length, 2);
  assert.equal(plan.placements.length, 2);
  assert.ok(plan.placements.every((a) => a.nodeId !== "n0"));
  assert.deepEqual(plan.placements.map((a) => a.name).sort(), ["web.g[0]", "web.g[1]"]);
});

test("allocations marked to migrate are stopped and replaced elsewhere, same name", () => {
  const j = job({ count: 2 });
  const allocs = running(j, 2, { node: "n0" });
  allocs[0].desiredTransition = { migrate: true };
  const ns = nodes(3);
  ns[0].drain = true;
  const plan = computePlan(snap(j, { allocs, nodes: ns }), { newId: ids() });
  assert.deepEqual(plan.updates.map((a) => [a.id, a.desiredDescription]), [["v0-0", "alloc is being migrated"]]);
  assert.deepEqual(plan.placements.map((a) => [a.name, a.previousAllocation]), [["web.g[0]", "v0-0"]]);
  assert.notEqual(plan.placements[0].nodeId, "n0");
  // linked both ways, as Nomad's state store does
  assert.equal(plan.updates[0].nextAllocation, plan.placements[0].id);
});

test("a migration with nowhere to go keeps running, linked to nothing", () => {
  const j = job({ count: 1 });
  const allocs = running(j, 1, { node: "n0" });
  allocs[0].desiredTransition = { migrate: true };
  const ns = nodes(1);
  ns[0].drain = true; // the only node: nowhere to go
  const plan = computePlan(snap(j, { allocs, nodes: ns }), { newId: ids() });
  assert.deepEqual([plan.updates.length, plan.placements.length], [0, 0]);
  assert.equal(plan.queued.get("g"), 1);
});

test("a stopped job stops everything", () => {
  const j = { ...job({ count: 2 }), stop: true };
  const plan = computePlan(snap(j, { allocs: running(j, 2) }), { newId: ids() });
  assert.equal(plan.updates.length, 2);
  assert.ok(plan.updates.every((a) => a.desiredStatus === STOP));
});

test("a plan never holds more than max_ops writes; the rest is `more`", () => {
  const plan = computePlan(snap(job({ count: 50 }), { nodes: nodes(10, 100000, 100000) }), { newId: ids(), maxOps: 20 });
  assert.ok(plan.objects() <= 20, `${plan.objects()} objects`);
  assert.ok(plan.more);
  assert.ok(plan.placements.length > 0);
});

test("batch: completed allocations of the current version count as done", () => {
  const j = job({ count: 2, type: 2 });
  const done = running(j, 2, { status: AllocClientStatus.ALLOC_CLIENT_STATUS_COMPLETE });
  const plan = computePlan(snap(j, { allocs: done }), { newId: ids() });
  assert.ok(plan.empty);
});

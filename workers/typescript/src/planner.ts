/**
 * The placement core (pure: no gRPC, no timers): computePlan turns one
 * snapshot into a Plan the way Nomad's generic scheduler reconciles a task
 * group. A faithful port of the Python reference worker's planner
 * (drover.worker.planner and .generic; their module docs state every rule):
 *
 * - allocations the drainer marked to migrate (or `alloc stop` stopped)
 *   are stopped and replaced, linked both ways (./migrate);
 * - a running allocation stays, unhealthy or not, even when the deployment
 *   watcher marked it to reschedule (Nomad's filterByRescheduleable /
 *   shouldFilter): the progress deadline decides its deployment;
 * - lost allocations are stopped and replaced at once; failed ones of an
 *   older version are stopped and replaced; failed ones of the current
 *   version follow the group's reschedule policy (./failed);
 * - a failed or cancelled deployment's un-promoted canaries are stopped;
 * - an old allocation whose tasks are unchanged is updated in place; the
 *   others are replaced (stop and place);
 * - with a running deployment that asks for canaries only canaries are
 *   placed until promotion, named by the indexes being replaced (Nomad's
 *   NextCanaries); then the old allocations sharing a canary's name are
 *   stopped first, and the others replaced at most max_parallel at a time
 *   less this deployment's ones not yet healthy;
 * - missing allocations are placed, excess ones stopped, a stopped job
 *   stops everything, a batch job's completed allocations count as done,
 *   a system job gets one allocation per eligible node (./system).
 *
 * What fits nowhere is `queued` (the worker then writes a blocked
 * evaluation); a plan never holds more than `maxOps` writes (`more`).
 */
import { Builder, nameIndex } from "./builder";
import * as failedAllocs from "./failed";
import * as migrate from "./migrate";
import * as penalty from "./penalty";
import * as reschedule from "./reschedule";
import { isLive } from "./resources";
import { seeded, type Rng } from "./rng";
import type { Plan, Snapshot } from "./snapshot";
import { reconcileSystem } from "./system";
import { DEFAULT_PLAN_OBJECTS } from "./planSize";
import {
  AllocClientStatus, AllocDesiredStatus, DeploymentStatus, JobType, NodeStatus,
  type Allocation, type Deployment, type Job, type Task, type TaskGroup,
} from "./types";

const RUN = AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN;
const LOST = AllocClientStatus.ALLOC_CLIENT_STATUS_LOST;
/** Nomad's Node.UnresponsiveStatus: a node in one of these has lost its allocations. */
const UNRESPONSIVE = new Set([NodeStatus.NODE_STATUS_DOWN, NodeStatus.NODE_STATUS_DISCONNECTED]);
const FAILED = AllocClientStatus.ALLOC_CLIENT_STATUS_FAILED;
const COMPLETE = AllocClientStatus.ALLOC_CLIENT_STATUS_COMPLETE;

export interface PlanOptions {
  rng?: Rng;
  newId?: () => string;
  maxOps?: number;
}

/** Structural equality of decoded messages (their fields are always present). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function tasksEqual(a: TaskGroup | null, b: TaskGroup): boolean {
  if (a === null) return false;
  return deepEqual(a.tasks as Task[], b.tasks as Task[]) && deepEqual(a.meta, b.meta);
}

function group(job: Job | null | undefined, name: string): TaskGroup | null {
  return job?.taskGroups.find((tg) => tg.name === name) ?? null;
}

function policyOf(job: Job, tg: TaskGroup): reschedule.Policy | null {
  return reschedule.resolve(job.type, tg.reschedule);
}

/** The plan that moves the job's allocations towards its spec. */
export function computePlan(snap: Snapshot, opts: PlanOptions = {}): Plan {
  let counter = 0;
  const b = new Builder(snap, opts.rng ?? seeded(0), opts.newId ?? (() => `alloc-${counter++}`),
    opts.maxOps ?? DEFAULT_PLAN_OBJECTS);
  const job = snap.job;
  const byGroup = new Map<string, Allocation[]>();
  for (const a of snap.allocs) {
    const list = byGroup.get(a.taskGroup);
    if (list) list.push(a);
    else byGroup.set(a.taskGroup, [a]);
  }
  if (job === null || job.stop) {
    for (const allocs of byGroup.values()) {
      for (const a of allocs) if (a.desiredStatus === RUN) b.stop(a, "alloc not needed since job is stopped");
    }
    return b.plan;
  }
  const groups = new Set(job.taskGroups.map((tg) => tg.name));
  for (const name of [...byGroup.keys()].sort()) {
    if (groups.has(name)) continue;
    for (const a of byGroup.get(name)!) {
      if (a.desiredStatus === RUN) b.stop(a, "alloc not needed since its task group was removed");
    }
  }
  for (const tg of job.taskGroups) {
    const allocs = byGroup.get(tg.name) ?? [];
    if (job.type === JobType.JOB_TYPE_SYSTEM) {
      reconcileSystem(b, job, tg, allocs, (a) => tasksEqual(group(snap.versions.get(a.jobVersion), tg.name), tg));
    } else {
      reconcileGroup(b, job, tg, allocs);
    }
  }
  return b.plan;
}

/**
 * The indexes of `n` new canaries (Nomad's NextCanaries): first those of
 * allocations being replaced (destructive updates, below `count`) that no
 * canary holds yet, lowest first; then free ones.
 */
export function canaryNames(n: number, count: number, destructive: readonly Allocation[],
  current: readonly Allocation[], nextName: () => number): number[] {
  const held = new Set(current.filter((a) => a.deploymentStatus?.canary).map((a) => nameIndex(a.name)));
  const out = [...new Set(destructive.map((a) => nameIndex(a.name)))]
    .filter((i) => i >= 0 && i < count && !held.has(i)).sort((x, y) => x - y).slice(0, n);
  while (out.length < n) out.push(nextName());
  return out;
}

/** A failed allocation of the current version (./failed): replaced now, noted for later, or kept. */
function failedAlloc(b: Builder, job: Job, tg: TaskGroup, a: Allocation, dep: Deployment | null, depId: string,
  later: Array<[number, Allocation]>): void {
  const policy = policyOf(job, tg);
  const j = failedAllocs.judge(a, policy, b.snap.evalId, b.snap.now, dep);
  if (j.verdict === "later") later.push([j.at, a]);
  if (j.verdict !== "now") return;
  if (b.ops() + 2 > b.maxOps) {
    b.plan.more = true;
    return;
  }
  if (!b.stop(a, failedAllocs.STOP_DESCRIPTION)) return;
  if (!b.place(job, tg, nameIndex(a.name), depId, { previous: a.id, avoid: penalty.penaltyNodes(a) })) {
    b.plan.updates.pop(); // nowhere to go: it stays failed (queued: blocked evaluation)
    return;
  }
  b.lastPlacement().rescheduleTracker = failedAllocs.replacementTracker(policy, a, b.snap.now);
  b.linkLast();
}

/** What the group's allocations are, sorted out for the rules below. */
interface Sorted {
  current: Allocation[]; // new version, occupying a slot
  old: Allocation[]; // older version, live
  freeNames: number[]; // indexes freed by stops
  migrating: Allocation[]; // marked by the node drainer
  later: Array<[number, Allocation]>; // reschedules due later
}

function sortOut(b: Builder, job: Job, tg: TaskGroup, allocs: readonly Allocation[], dep: Deployment | null,
  depId: string): Sorted {
  const s: Sorted = { current: [], old: [], freeNames: [], migrating: [], later: [] };
  const batch = job.type === JobType.JOB_TYPE_BATCH;
  // Lost: on a node gone, down or disconnected (Nomad's tainted nodes). A draining
  // node's allocations stay until the drainer marks them; an initializing node keeps its.
  const known = new Map(b.snap.nodes.map((n) => [n.id, n.status]));
  const lostOn = (id: string): boolean => {
    const status = known.get(id);
    return status === undefined || UNRESPONSIVE.has(status);
  };
  for (const a of allocs) {
    if (a.desiredStatus !== RUN) {
      // drained (Nomad's filters): its slot stays counted
      if (batch && a.jobVersion === job.version && !migrate.replaced(a)) s.current.push(a);
      continue;
    }
    if (a.clientStatus === LOST || (isLive(a) && lostOn(a.nodeId))) {
      if (b.stop(a, "alloc is lost since its node is down", LOST)) s.freeNames.push(nameIndex(a.name));
      continue;
    }
    if (a.clientStatus === COMPLETE) {
      if (batch && a.jobVersion === job.version) s.current.push(a); // done: counts towards the group
      continue;
    }
    if (a.clientStatus === FAILED) {
      if (a.jobVersion === job.version) {
        s.current.push(a); // holds its slot: replaced (now) or not (./failed)
        failedAlloc(b, job, tg, a, dep, depId, s.later);
      } else if (b.stop(a, "alloc failed; replaced by the new version")) {
        s.freeNames.push(nameIndex(a.name));
      }
      continue;
    }
    if (migrate.marked(a)) {
      s.migrating.push(a);
      continue;
    }
    (a.jobVersion === job.version ? s.current : s.old).push(a);
  }
  return s;
}

function reconcileGroup(b: Builder, job: Job, tg: TaskGroup, allocs: readonly Allocation[]): void {
  const snap = b.snap;
  const dep = snap.deployment !== null && snap.deployment.jobVersion === job.version ? snap.deployment : null;
  const depRunning = dep !== null && dep.status === DeploymentStatus.DEPLOYMENT_STATUS_RUNNING;
  const depId = depRunning && dep !== null && tg.name in dep.taskGroups ? dep.id : "";
  const dstate = dep?.taskGroups[tg.name];
  const batch = job.type === JobType.JOB_TYPE_BATCH;
  const count = tg.count ?? 0;

  const { current, old, freeNames, migrating, later } = sortOut(b, job, tg, allocs, dep, depId);
  let cur = current;
  if (later.length) {
    const [evals, marked] = failedAllocs.laterEvals(job, snap.evalId, later, b.newId);
    if (b.ops() + marked.length <= b.maxOps) {
      b.plan.updates.push(...marked);
      b.plan.evaluations.push(...evals);
    } else {
      b.plan.more = true;
    }
  }
  if (dep !== null && (dep.status === DeploymentStatus.DEPLOYMENT_STATUS_FAILED
    || dep.status === DeploymentStatus.DEPLOYMENT_STATUS_CANCELLED) && !dstate?.promoted) {
    // Nomad's cancelUnneededCanaries: a failed or cancelled deployment's un-promoted canaries go.
    for (const a of cur.filter((x) => x.deploymentStatus?.canary && x.deploymentId === dep.id && x.clientStatus !== FAILED)) {
      if (b.stop(a, "alloc not needed due to job update")) cur = cur.filter((x) => x !== a);
    }
  }
  const moved = migrate.migrate(b, job, tg, migrating, depId, new Map(migrating.map((a) => [a.id, nameIndex(a.name)])));
  for (const a of moved.kept) (a.jobVersion === job.version ? cur : old).push(a);
  const held = moved.held; // slots the migrations fill

  const inplace = old.filter((a) => !batch && tasksEqual(group(snap.versions.get(a.jobVersion), tg.name), tg));
  let destructive = batch ? [] : old.filter((a) => !inplace.includes(a)); // an old batch one finishes
  const updated = new Set<string>(); // updated in place by this plan
  for (const a of inplace) if (b.inPlace(a, job, depId)) { cur.push(a); updated.add(a.id); }

  const usedNames = new Set([...cur, ...old, ...migrating].map((a) => nameIndex(a.name)));
  let lowest = 0; // no free index below it: names are only ever taken
  const nextName = (): number => {
    let i = lowest;
    while (usedNames.has(i)) i++;
    usedNames.add(i);
    lowest = i + 1;
    return i;
  };

  // Canaries: only while a running deployment waits for them.
  const wantCanaries = dstate !== undefined && depRunning ? dstate.desiredCanaries : 0;
  if (wantCanaries && !dstate!.promoted) {
    const have = cur.filter((a) => a.deploymentStatus?.canary).length;
    const newCanaries = Math.max(0, wantCanaries - have);
    for (const index of canaryNames(newCanaries, count, destructive, cur, nextName)) {
      b.place(job, tg, index, depId, { canary: true });
    }
    const missing = destructive.length
      ? count - (cur.length - have) - destructive.length - held // the old ones serve beside the canaries
      : count - cur.length - newCanaries - held; // nothing old left: canaries are part of the count
    for (let i = 0; i < missing; i++) b.place(job, tg, nextName(), depId);
    return;
  }

  const live = cur.length + destructive.length + held;
  if (cur.length + held >= count) {
    for (const a of destructive) b.stop(a, "alloc not needed: replaced by the new version");
    const extra = cur.filter((a) => a.clientStatus !== COMPLETE && a.clientStatus !== FAILED)
      .sort((x, y) => nameIndex(y.name) - nameIndex(x.name)).slice(0, Math.max(0, cur.length + held - count));
    for (const a of extra) {
      if (updated.has(a.id)) b.dropUpdate(a.id); // stopped instead: one write per allocation
      b.stop(a, "alloc not needed due to job update");
    }
    return;
  }
  if (live > count) {
    // More old ones than needed (canaries took slots, or count lowered):
    // first those a canary shares a name with (Nomad's computeStop), then the highest indexes.
    const taken = new Set(cur.map((a) => nameIndex(a.name)));
    const rank = (a: Allocation): number => (taken.has(nameIndex(a.name)) ? 0 : 1);
    const surplus = [...destructive]
      .sort((x, y) => rank(x) - rank(y) || nameIndex(y.name) - nameIndex(x.name)).slice(0, live - count);
    for (const a of surplus) b.stop(a, "alloc not needed due to job update");
    destructive = destructive.filter((a) => !surplus.includes(a));
  }
  for (let i = count - cur.length - destructive.length - held; i > 0; i--) {
    // a stopped allocation's replacement takes its name; taken, so nextName skips it
    const index = freeNames.length ? freeNames.pop()! : nextName();
    usedNames.add(index);
    b.place(job, tg, index, depId);
  }

  if (dep !== null && !depRunning) return; // paused, failed or cancelled: no destructive updates
  let limit = destructive.length;
  const maxParallel = tg.update?.maxParallel ?? 0;
  if (maxParallel > 0 && depRunning) {
    const inFlight = cur.filter((a) => a.deploymentId === depId && a.deploymentStatus?.healthy !== true).length;
    limit = Math.max(0, maxParallel - inFlight);
  }
  for (const a of [...destructive].sort((x, y) => nameIndex(x.name) - nameIndex(y.name)).slice(0, limit)) {
    if (!b.fits(4)) { // a stop and a placement, their nodes
      b.plan.more = true;
      return;
    }
    b.stop(a, "alloc is being updated due to job update");
    if (!b.place(job, tg, nameIndex(a.name), depId, { previous: a.id })) b.undoStop(a); // keep the old one
  }
}

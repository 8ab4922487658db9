/**
 * System jobs: one allocation of each task group per eligible node (pure).
 * The Python reference: drover.worker.system (its module doc has the rules).
 *
 * - the targets are the packer's candidates (ready, eligible, not
 *   draining, in the job's datacenters); each gets one allocation per
 *   group, on that node if it has room, else the group is queued;
 * - an allocation on a node gone or out of the job's datacenters is
 *   stopped; on an ineligible or draining node it is left to the drain
 *   (stopped when the drainer marks it, or when the job changed);
 * - one marked to migrate on a target node (`alloc stop`: Nomad's
 *   Alloc.Stop) is stopped and replaced on the same node, linked both ways;
 * - an older version is updated in place when its tasks are unchanged,
 *   else replaced on the same node, max_parallel nodes per evaluation;
 * - a second allocation of a group on one node is stopped.
 */
import type { Builder } from "./builder";
import * as migrate from "./migrate";
import { add, fitsIn, vecOf, ZERO } from "./resources";
import { AllocClientStatus, AllocDesiredStatus, type Allocation, type Job, type Node, type TaskGroup } from "./types";
import { isLive } from "./resources";

const RUN = AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN;

function byNodeVersionId(a: Allocation, b: Allocation): number {
  if (a.nodeId !== b.nodeId) return a.nodeId < b.nodeId ? -1 : 1;
  if (a.jobVersion !== b.jobVersion) return b.jobVersion > a.jobVersion ? 1 : -1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export function reconcileSystem(b: Builder, job: Job, tg: TaskGroup, allocs: readonly Allocation[],
  sameTasks: (a: Allocation) => boolean): void {
  const nodes = new Map(b.snap.nodes.map((n) => [n.id, n]));
  const targets = new Map(b.packer.nodes.map((n) => [n.id, n]));
  const dcs = new Set(job.datacenters);
  const maxParallel = tg.update?.maxParallel ?? 0;
  let budget = maxParallel > 0 ? maxParallel : targets.size || 1;
  const covered = new Set<string>();
  for (const a of [...allocs].sort(byNodeVersionId)) {
    if (a.desiredStatus !== RUN || !isLive(a)) {
      if (a.desiredStatus === RUN && a.clientStatus === AllocClientStatus.ALLOC_CLIENT_STATUS_FAILED
        && a.jobVersion === job.version) covered.add(a.nodeId); // failed on this version: not replaced here
      continue;
    }
    const node = nodes.get(a.nodeId);
    if (node === undefined || (!dcs.has("*") && !dcs.has(node.datacenter))) {
      b.stop(a, "alloc not needed as node is no longer in the job's datacenters");
      continue;
    }
    if (covered.has(a.nodeId)) {
      b.stop(a, "alloc not needed: the node already runs one of the group");
      continue;
    }
    covered.add(a.nodeId);
    const target = targets.get(a.nodeId);
    if (target === undefined) {
      if (migrate.marked(a)) b.stop(a, migrate.WHY); // the drainer's word: it leaves (last)
      else if (a.jobVersion !== job.version) b.stop(a, "alloc not needed as node is not eligible and the job changed");
      continue; // ineligible or draining: left to the drain
    }
    if (migrate.marked(a)) {
      replace(b, job, tg, a, target);
      continue;
    }
    if (a.jobVersion === job.version) continue;
    if (sameTasks(a)) {
      b.inPlace(a, job, "");
      continue;
    }
    if (budget <= 0) {
      b.plan.more = true;
      continue;
    }
    budget -= 1;
    if (!b.stop(a, "alloc is being updated due to job update")) continue; // no room left (more): a follow-up replaces it
    if (!placeOn(b, job, tg, target, a.id)) b.undoStop(a); // no room for the new one: the old one keeps running, and its room
  }
  for (const id of [...targets.keys()].sort()) {
    if (!covered.has(id)) placeOn(b, job, tg, targets.get(id)!);
  }
}

/** Stop `a` (marked to migrate) and place its replacement on its node. */
function replace(b: Builder, job: Job, tg: TaskGroup, a: Allocation, node: Node): void {
  if (!b.roomFor(2)) return; // the plan says more: a follow-up evaluation replaces it
  b.stop(a, migrate.WHY);
  if (placeOn(b, job, tg, node, a.id)) b.linkLast();
}

function placeOn(b: Builder, job: Job, tg: TaskGroup, node: Node, previous = ""): boolean {
  if (!b.room()) return false;
  const ask = b.ask(job, tg);
  const after = add(b.packer.used.get(node.id) ?? ZERO, ask);
  if (!fitsIn(after, vecOf(node.resources))) {
    b.plan.queue(tg.name);
    return false;
  }
  b.packer.used.set(node.id, after);
  b.plan.placements.push(b.allocation(job, tg, 0, node.id, "", ask, { previous }));
  return true;
}

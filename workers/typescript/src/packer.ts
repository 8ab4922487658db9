/**
 * Bin-packing a plan's placements over the candidate nodes (pure). The
 * Python reference: drover.worker.packer.
 *
 * Nomad's rank iterator in small: the candidates are the schedulable nodes
 * of the job's datacenters, shuffled once per plan; each placement scores
 * the first `limit` nodes that fit (limit = max(2, ceil(log2 n)), as Nomad
 * limits its candidates) with Nomad's best-fit score less a penalty for the
 * job's allocations of the group already on the node (spread), and a
 * replacement's penalty nodes are passed over; the next search starts after
 * the chosen node, so ties spread. The packer tracks what this plan itself
 * places and frees, on top of what the snapshot says each node reserves.
 */
import * as penalty from "./penalty";
import { add, isLive, sub, vecOf, ZERO, type Vec } from "./resources";
import { shuffle, type Rng } from "./rng";
import { NodeSchedulingEligibility, NodeStatus, type Allocation, type Node } from "./types";
import type { Snapshot } from "./snapshot";

export function schedulable(node: Node): boolean {
  return node.status === NodeStatus.NODE_STATUS_READY && !node.drain
    && node.schedulingEligibility !== NodeSchedulingEligibility.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE;
}

/** Nomad's best-fit score of a node holding `cpu`/`memory` of `cap` (0..1: fuller is higher). */
export function bestFit(cpu: number, memory: number, cap: Vec): number {
  const freeCpu = cap.cpu ? 1 - cpu / cap.cpu : 0;
  const freeMem = cap.memoryMb ? 1 - memory / cap.memoryMb : 0;
  return (20 - (10 ** freeCpu + 10 ** freeMem)) / 18;
}

export class Packer {
  readonly nodes: Node[];
  /** Per node id: what it reserves with this plan's own changes (a copy). */
  readonly used: Map<string, Vec>;
  readonly limit: number;
  /** "node\0group" -> allocations of the job there. */
  private readonly groups = new Map<string, number>();
  private offset = 0;

  constructor(snap: Snapshot, rng: Rng) {
    const dcs = new Set(snap.job?.datacenters ?? []);
    this.nodes = snap.nodes.filter((n) => schedulable(n) && (!dcs.size || dcs.has("*") || dcs.has(n.datacenter)));
    shuffle(this.nodes, rng);
    this.used = new Map(snap.nodeUsed);
    this.limit = this.nodes.length ? Math.max(2, Math.ceil(Math.log2(this.nodes.length))) : 0;
    for (const a of snap.allocs) {
      if (isLive(a)) this.bump(a.nodeId, a.taskGroup);
    }
  }

  private bump(nodeId: string, group: string): void {
    const key = `${nodeId}\0${group}`;
    this.groups.set(key, (this.groups.get(key) ?? 0) + 1);
  }

  /** A stopped allocation's room is free for this plan's placements. */
  release(a: Allocation): void {
    if (isLive(a)) this.used.set(a.nodeId, sub(this.used.get(a.nodeId) ?? ZERO, vecOf(a.resources)));
  }

  /** Give back what `a` reserves (a stop taken back; as release freed it: only a live one's). */
  restore(a: Allocation): void {
    if (isLive(a)) this.used.set(a.nodeId, add(this.used.get(a.nodeId) ?? ZERO, vecOf(a.resources)));
  }

  /** The best of the first `limit` fitting nodes; `avoid`: a replacement's penalty nodes. */
  place(group: string, ask: Vec, count: number, avoid: ReadonlySet<string> = new Set()): Node | null {
    let best: [number, number] | null = null;
    let seen = 0;
    let skipped = 0;
    const n = this.nodes.length;
    for (let i = 0; i < n; i++) {
      const at = (this.offset + i) % n;
      const node = this.nodes[at];
      const cap = vecOf(node.resources);
      const now = this.used.get(node.id) ?? ZERO;
      const cpu = now.cpu + ask.cpu;
      const memory = now.memoryMb + ask.memoryMb;
      if (cpu > cap.cpu || memory > cap.memoryMb) continue;
      let score = bestFit(cpu, memory, cap) - (this.groups.get(`${node.id}\0${group}`) ?? 0) / Math.max(1, count);
      const avoided = avoid.has(node.id);
      if (avoided) score -= penalty.SCORE;
      if (best === null || score > best[0]) best = [score, at];
      if (avoided && skipped < penalty.MAX_SKIP) {
        skipped += 1; // passed over: not counted against the limit
        continue;
      }
      seen += 1;
      if (seen >= this.limit) break;
    }
    if (best === null) return null;
    const node = this.nodes[best[1]];
    this.offset = (best[1] + 1) % n; // the next search starts after it: spreads ties
    this.used.set(node.id, add(this.used.get(node.id) ?? ZERO, ask));
    this.bump(node.id, group);
    return node;
  }
}

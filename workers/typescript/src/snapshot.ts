/**
 * What one plan is computed from, and the plan (pure data). The Python
 * reference: drover.worker.plan's Snapshot and Plan.
 */
import type { Vec } from "./resources";
import type { Allocation, Deployment, Evaluation, Job, Node } from "./types";

export interface Snapshot {
  namespace: string;
  jobId: string;
  job: Job | null;
  /** Per job version: that version of the job. */
  versions: ReadonlyMap<bigint, Job>;
  deployment: Deployment | null;
  allocs: readonly Allocation[];
  nodes: readonly Node[];
  /** Per node id: what its live allocations (of every job) reserve. */
  nodeUsed: ReadonlyMap<string, Vec>;
  evalId: string;
  /** Wall-clock seconds the plan is computed at (reschedule delays count on it). */
  now: number;
}

export class Plan {
  placements: Allocation[] = [];
  /** Stops and in-place updates: the whole new value of existing allocations. */
  updates: Allocation[] = [];
  /** Per task group: allocations that fit on no node. */
  queued = new Map<string, number>();
  /** More work than fit in this plan: evaluate again. */
  more = false;
  /** Evaluations written with the plan (reschedules due later). */
  evaluations: Evaluation[] = [];

  get empty(): boolean {
    return !this.placements.length && !this.updates.length && !this.evaluations.length;
  }

  nodeIds(): Set<string> {
    return new Set(this.placements.map((a) => a.nodeId));
  }

  /** What the plan writes in its txn: its allocations and one usage record per node it touches. */
  objects(): number {
    const nodes = new Set([...this.placements, ...this.updates].map((a) => a.nodeId));
    return this.placements.length + this.updates.length + nodes.size;
  }

  queue(group: string): void {
    this.queued.set(group, (this.queued.get(group) ?? 0) + 1);
  }

  queuedTotal(): number {
    let n = 0;
    for (const v of this.queued.values()) n += v;
    return n;
  }
}

/**
 * A plan being built (pure): its stops, in-place updates and placements,
 * the packer that places them, and the plan's size cap. The Python
 * reference: drover.worker.builder's PlanBuilder.
 */
import { Packer } from "./packer";
import { groupAsk, toResources, type Vec } from "./resources";
import type { Rng } from "./rng";
import { Plan, type Snapshot } from "./snapshot";
import { AllocClientStatus, AllocDesiredStatus, Allocation, type Job, type TaskGroup } from "./types";

const INDEX = /\[(\d+)\]$/;

/** The index in an allocation's name (`job.group[3]` -> 3; -1: none). */
export function nameIndex(name: string): number {
  const m = INDEX.exec(name);
  return m ? parseInt(m[1], 10) : -1;
}

export function copyAlloc(a: Allocation): Allocation {
  return structuredClone(a);
}

export interface PlaceOptions {
  canary?: boolean;
  previous?: string;
  avoid?: ReadonlySet<string>;
}

export class Builder {
  readonly plan = new Plan();
  readonly packer: Packer;
  /** Per "version\0group": what one allocation asks. */
  private readonly asks = new Map<string, Vec>();

  constructor(readonly snap: Snapshot, rng: Rng, readonly newId: () => string, readonly maxOps: number) {
    this.packer = new Packer(snap, rng);
  }

  ops(): number {
    return this.plan.placements.length + this.plan.updates.length;
  }

  /**
   * `more` objects fit beside the plan's (its usage records counted). Each
   * allocation brings at most one node, so while twice their number fits,
   * the plan's nodes need no counting.
   */
  fits(more: number): boolean {
    return 2 * this.ops() + more <= this.maxOps || this.plan.objects() + more <= this.maxOps;
  }

  /** `ops` more writes fit in this plan; else it says `more`. */
  roomFor(ops: number): boolean {
    if (this.fits(ops)) return true;
    this.plan.more = true;
    return false;
  }

  /** Room for an allocation, maybe on a new node. */
  room(): boolean {
    return this.roomFor(2);
  }

  /** Stop `a` for `why`; with `clientStatus` (Nomad's AppendStoppedAlloc: lost) its client status too. */
  stop(a: Allocation, why: string, clientStatus?: AllocClientStatus): boolean {
    if (!this.room()) return false;
    const out = copyAlloc(a);
    out.desiredStatus = AllocDesiredStatus.ALLOC_DESIRED_STATUS_STOP;
    out.desiredDescription = why;
    if (clientStatus !== undefined) out.clientStatus = clientStatus;
    this.plan.updates.push(out);
    this.packer.release(a);
    return true;
  }

  /** The last stop names the last placement, its replacement, as its nextAllocation. */
  linkLast(): void {
    this.lastUpdate().nextAllocation = this.lastPlacement().id;
  }

  /** Take back this plan's update of `allocId` (its in-place update). */
  dropUpdate(allocId: string): void {
    this.plan.updates = this.plan.updates.filter((u) => u.id !== allocId);
  }

  /** Take back the last stop (of `a`): it keeps running and its room. */
  undoStop(a: Allocation): void {
    this.plan.updates.pop();
    this.packer.restore(a);
  }

  inPlace(a: Allocation, job: Job, depId: string): boolean {
    if (!this.room()) return false;
    const out = copyAlloc(a);
    out.jobVersion = job.version;
    out.evalId = this.snap.evalId;
    if (depId && out.deploymentId !== depId) {
      out.deploymentId = depId;
      out.deploymentStatus = undefined; // health is re-reported for the new deployment
    }
    this.plan.updates.push(out);
    return true;
  }

  ask(job: Job, tg: TaskGroup): Vec {
    const key = `${job.version}\0${tg.name}`;
    let ask = this.asks.get(key);
    if (ask === undefined) {
      ask = groupAsk(tg);
      this.asks.set(key, ask);
    }
    return ask;
  }

  /** A new allocation of `tg` named by `index`, on the best node; false: none fits (queued). */
  place(job: Job, tg: TaskGroup, index: number, depId: string, opts: PlaceOptions = {}): boolean {
    if (!this.room()) return false;
    const ask = this.ask(job, tg);
    const node = this.packer.place(tg.name, ask, tg.count ?? 0, opts.avoid);
    if (node === null) {
      this.plan.queue(tg.name);
      return false;
    }
    this.plan.placements.push(this.allocation(job, tg, index, node.id, depId, ask, opts));
    return true;
  }

  allocation(job: Job, tg: TaskGroup, index: number, nodeId: string, depId: string, ask: Vec,
    opts: PlaceOptions = {}): Allocation {
    return Allocation.fromPartial({
      id: this.newId(), namespace: job.namespace, name: `${job.id}.${tg.name}[${index}]`, jobId: job.id,
      jobVersion: job.version, taskGroup: tg.name, nodeId, deploymentId: depId, evalId: this.snap.evalId,
      desiredStatus: AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN,
      clientStatus: AllocClientStatus.ALLOC_CLIENT_STATUS_PENDING, previousAllocation: opts.previous ?? "",
      resources: toResources(ask), deploymentStatus: opts.canary ? { canary: true } : undefined,
    });
  }

  lastPlacement(): Allocation {
    return this.plan.placements[this.plan.placements.length - 1];
  }

  lastUpdate(): Allocation {
    return this.plan.updates[this.plan.updates.length - 1];
  }
}

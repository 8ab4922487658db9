/**
 * The worker's view of the cluster: nodes and what each one reserves. The
 * Python reference: drover.worker.view (its module doc has the reasons).
 *
 * An informer: one paged List of nodes and live allocations, then one
 * Subscribe to the Node and Allocation topics from the index of that read
 * (heartbeats every 100 ms carry the index the stream has passed). It may
 * lag the store: the state service re-checks every node at SubmitPlan. A
 * plan's placements are counted here as it is submitted (reserve), keyed
 * by allocation id, so the other scheduling loops plan around them; those
 * not committed are taken back (release). Stops are never counted ahead.
 *
 * A reload (the stream broke, or a wait for an index the state service named
 * timed out: reload()) lists into new tables and puts them in place at once,
 * carrying over placements reserved and not yet seen committed; plans go on
 * over the old tables meanwhile, never over an emptied view.
 */
import { EventType, Topic } from "@drover/api/drover/state/v1/state";
import type { Connection } from "./rpc";
import { add, isLive, sub, vecOf, ZERO, type Vec } from "./resources";
import { describe } from "./status";
import type { Allocation, Node } from "./types";

export const PAGE = 1000;
/** The heartbeat interval the view's stream asks for (the state service's least). */
export const FOLLOW_INTERVAL_MS = 100;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Usage = { allocs: Map<string, [string, Vec]>; used: Map<string, Vec> };

/** Count `a` on its node (keyed by id: a later copy replaces an earlier one), or take it back if deleted or no longer live. */
function apply(u: Usage, a: Allocation, deleted = false): void {
  const old = u.allocs.get(a.id);
  if (old !== undefined) {
    u.allocs.delete(a.id);
    u.used.set(old[0], sub(u.used.get(old[0]) ?? ZERO, old[1]));
  }
  if (!deleted && isLive(a)) {
    const res = vecOf(a.resources);
    u.allocs.set(a.id, [a.nodeId, res]);
    u.used.set(a.nodeId, add(u.used.get(a.nodeId) ?? ZERO, res));
  }
}

export class ClusterView {
  nodes = new Map<string, Node>();
  used = new Map<string, Vec>();
  index = 0n;
  private allocs = new Map<string, [string, Vec]>(); // live alloc id -> [node, reserved]
  /** Placements reserved and not yet seen committed: carried over a reload. */
  private readonly reserved = new Map<string, Allocation>();
  private waiters: Array<() => void> = [];
  private readyResolve!: () => void;
  readonly ready = new Promise<void>((r) => (this.readyResolve = r));
  private stopped = false;
  private stream: { cancel(): void } | null = null; // null while listing
  private reloading = false;

  constructor(private readonly conn: Connection, private readonly log: (msg: string) => void) {}

  private applyAlloc(a: Allocation, deleted = false): void {
    apply({ allocs: this.allocs, used: this.used }, a, deleted);
  }

  /** Count placements being submitted (not yet committed) on their nodes. */
  reserve(placements: Iterable<Allocation>): void {
    for (const a of placements) {
      this.reserved.set(a.id, a);
      this.applyAlloc(a);
    }
  }

  /** Take back reserved placements that were not committed. */
  release(placements: Iterable<Allocation>): void {
    for (const a of placements) {
      this.reserved.delete(a.id);
      this.applyAlloc(a, true);
    }
  }

  /** List into new tables, then put them in place at once (plans go on over the old ones meanwhile). */
  private async load(): Promise<bigint> {
    const nodes = new Map<string, Node>();
    const fresh: Usage = { allocs: new Map(), used: new Map() };
    let index = 0n;
    let pageToken = "";
    do {
      const resp = await this.conn.listNodes({ prefix: "", filter: "", orderBy: "", pageSize: PAGE, pageToken }, 30);
      index = index || (resp.meta?.index ?? 0n);
      for (const n of resp.nodes) nodes.set(n.id, n);
      pageToken = resp.nextPageToken;
    } while (pageToken);
    do {
      const resp = await this.conn.listAllocations({
        namespace: "*", prefix: "", filter: 'desired_status == "run"', orderBy: "", pageSize: PAGE, pageToken,
      }, 30);
      for (const a of resp.allocations) apply(fresh, a);
      pageToken = resp.nextPageToken;
    } while (pageToken);
    for (const [id, a] of [...this.reserved]) { // submitted meanwhile, not yet listed
      if (fresh.allocs.has(id)) this.reserved.delete(id);
      else apply(fresh, a);
    }
    this.nodes = nodes;
    this.allocs = fresh.allocs;
    this.used = fresh.used;
    return index;
  }

  private advanced(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Load, then follow the stream; reload after any break, until stop(). */
  async run(): Promise<void> {
    while (!this.stopped) {
      try {
        this.index = await this.load();
        this.readyResolve();
        this.advanced(); // a wait for an index the list passed is over
        const stream = this.conn.subscribe({
          topics: [Topic.TOPIC_NODE, Topic.TOPIC_ALLOCATION], keys: [], namespace: "", fromIndex: this.index,
          heartbeatInterval: { seconds: 0n, nanos: FOLLOW_INTERVAL_MS * 1e6 },
        });
        this.stream = stream;
        for await (const resp of stream) {
          for (const ev of resp.events) {
            const deleted = ev.type === EventType.EVENT_TYPE_DELETE;
            if (ev.node !== undefined) {
              if (deleted) this.nodes.delete(ev.key);
              else this.nodes.set(ev.node.id, ev.node);
            } else if (ev.allocation !== undefined) {
              this.reserved.delete(ev.allocation.id);
              this.applyAlloc(ev.allocation, deleted);
            }
          }
          if (resp.index > this.index) this.index = resp.index;
          this.advanced();
        }
        if (!this.stopped && !this.reloading) this.log("worker view: the stream ended; reloading");
      } catch (err) {
        if (this.stopped) break;
        if (this.reloading) continue; // cut by reload(): list again at once
        this.conn.streamFailed(err);
        this.log(`worker view: ${describe(err)}; reloading`);
        await sleep(500);
      } finally {
        this.stream = null;
        this.reloading = false;
      }
    }
  }

  /**
   * List everything again and follow from there: the stream is proven behind
   * (a wait for an index the state service named timed out), so what it holds
   * may be stale (Nomad plans on a snapshot at the refresh index, never older).
   */
  reload(why: string): void {
    if (this.stream === null || this.reloading) return;
    this.log(`worker view: ${why}; reloading`);
    this.reloading = true;
    this.stream.cancel();
  }

  stop(): void {
    this.stopped = true;
    this.stream?.cancel();
    this.advanced();
  }

  /** Until the view has seen `index` (or `withinSec` passed: it may have had nothing to deliver); whether it has. */
  async waitPast(index: bigint, withinSec: number): Promise<boolean> {
    const deadline = Date.now() + withinSec * 1000;
    while (this.index < index && !this.stopped) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.index >= index;
  }
}

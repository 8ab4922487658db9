/**
 * Allocations marked to migrate (pure; the planner's hook). The Python
 * reference: drover.worker.migrate.
 *
 * A marked allocation (the node drainer's mark, or `alloc stop`: Nomad's
 * Alloc.Stop, for every job type) is stopped ("alloc is being migrated") and
 * a replacement of the same name placed in the same plan, naming it in
 * previous_allocation (the stopped one's next_allocation names the
 * replacement, as Nomad's state store links them); with nowhere to go it
 * keeps running (queued: a blocked evaluation waits for room). A batch one
 * the drainer marked also carries migrate_disable_placement (Nomad's
 * MigrateDisablePlacement): stopped and not replaced. System jobs are
 * planned by system.ts, which reads the same mark. The drainer decides how
 * many move at once; the planner moves exactly the marked ones.
 */
import type { Builder } from "./builder";
import type { Allocation, Job, TaskGroup } from "./types";

export const WHY = "alloc is being migrated";

export function marked(a: Allocation): boolean {
  return !!a.desiredTransition?.migrate;
}

/** A marked allocation gets a replacement (all but a drained batch one). */
export function replaced(a: Allocation): boolean {
  return !a.desiredTransition?.migrateDisablePlacement;
}

export interface Moved {
  /** Marked allocations that stay (nowhere to go, or no room left in this plan). */
  kept: Allocation[];
  /** Slots the migrations hold: a replacement placed, or a drained batch one stopped. */
  held: number;
}

export function migrate(b: Builder, job: Job, tg: TaskGroup, allocs: readonly Allocation[], depId: string,
  nameIndex: ReadonlyMap<string, number>): Moved {
  const out: Moved = { kept: [], held: 0 };
  for (const a of allocs) {
    const again = replaced(a);
    if (!b.roomFor(again ? 2 : 1) || !b.stop(a, WHY)) {
      out.kept.push(a); // the rest in a follow-up evaluation
      continue;
    }
    if (!again) {
      out.held += 1;
    } else if (b.place(job, tg, nameIndex.get(a.id)!, depId, { previous: a.id })) {
      b.linkLast();
      out.held += 1;
    } else {
      b.undoStop(a); // nowhere to go: it keeps running
      out.kept.push(a);
    }
  }
  return out;
}

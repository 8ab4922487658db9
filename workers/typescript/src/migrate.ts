/**
 * Allocations the node drainer marked to migrate (pure; the planner's
 * hook). The Python reference: drover.worker.migrate.
 *
 * A marked allocation of a service job is stopped ("alloc is being
 * migrated") and a replacement of the same name placed in the same plan,
 * naming it in previous_allocation (the stopped one's next_allocation names
 * the replacement, as Nomad's state store links them; `alloc stop` of a
 * service allocation is such a migration too); with nowhere to go it keeps running
 * (queued: a blocked evaluation waits for room). A batch or system one is
 * stopped and not replaced (Nomad's MigrateDisablePlacement). The drainer
 * decides how many move at once; the planner moves exactly the marked ones.
 */
import type { Builder } from "./builder";
import { JobType, type Allocation, type Job, type TaskGroup } from "./types";

export const WHY = "alloc is being migrated";

export function marked(a: Allocation): boolean {
  return !!a.desiredTransition?.migrate;
}

export interface Moved {
  /** Marked allocations that stay (nowhere to go, or no room left in this plan). */
  kept: Allocation[];
  /** Slots the migrations hold: a replacement placed, or a batch/system one stopped. */
  held: number;
}

export function migrate(b: Builder, job: Job, tg: TaskGroup, allocs: readonly Allocation[], depId: string,
  nameIndex: ReadonlyMap<string, number>): Moved {
  const out: Moved = { kept: [], held: 0 };
  const service = job.type === JobType.JOB_TYPE_SERVICE || job.type === JobType.JOB_TYPE_UNSPECIFIED;
  for (const a of allocs) {
    if (!b.roomFor(service ? 2 : 1) || !b.stop(a, WHY)) {
      out.kept.push(a); // the rest in a follow-up evaluation
      continue;
    }
    if (!service) {
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

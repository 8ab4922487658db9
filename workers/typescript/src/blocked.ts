/**
 * What a blocked evaluation waits for (pure): the job's datacenters and the
 * component-wise smallest ask of the groups left queued (a lower bound),
 * and the index its plan was computed at, so the state service unblocks it
 * by need and at once if it missed an unblock since. The Python reference:
 * drover.worker.blocked.
 */
import { groupAsk } from "./resources";
import type { Plan, Snapshot } from "./snapshot";
import type { Evaluation } from "./types";

export function blockedNeed(ev: Evaluation, snap: Snapshot, plan: Plan, index: bigint): void {
  ev.snapshotIndex = index;
  const job = snap.job;
  if (job === null) return;
  ev.blockedDatacenters.push(...job.datacenters);
  const asks = job.taskGroups.filter((tg) => plan.queued.get(tg.name)).map(groupAsk);
  if (asks.length) {
    ev.blockedAsk = { cpu: Math.min(...asks.map((a) => a.cpu)), memoryMb: Math.min(...asks.map((a) => a.memoryMb)) };
  }
}

/**
 * Nomad's node-reschedule-penalty (pure): a rescheduled allocation's
 * replacement avoids the nodes its predecessors failed on (the previous
 * allocation's node when it failed there, and every prev_node_id of its
 * tracker). Each penalty node scores -1, and the
 * search passes over up to MAX_SKIP of them before counting them against
 * its limit. The Python reference: drover.worker.penalty.
 */
import { AllocClientStatus, type Allocation } from "./types";

/** What a penalty node's score loses. */
export const SCORE = 1.0;
/** Penalised nodes the search passes over before counting them (Nomad's maxSkip). */
export const MAX_SKIP = 3;

export function penaltyNodes(prev: Allocation): ReadonlySet<string> {
  const out = new Set<string>();
  for (const e of prev.rescheduleTracker?.events ?? []) if (e.prevNodeId) out.add(e.prevNodeId);
  if (prev.nodeId && prev.clientStatus === AllocClientStatus.ALLOC_CLIENT_STATUS_FAILED) out.add(prev.nodeId);
  return out;
}

/**
 * How many writes one plan may hold: one etcd txn of this cluster's (pure).
 * The Python reference: drover.worker.plan_size.
 *
 * SubmitPlan is one etcd txn: a plan writes at most etcd's --max-txn-ops
 * less the revision marker the state service adds to every write (1) and
 * the job's status and summary it writes with every plan (2). A plan over
 * the state replica's cap is refused before anything is written
 * (INVALID_ARGUMENT, ErrorInfo metadata `max_objects`): the worker plans to
 * that cap from then on.
 */

/** etcd's default --max-txn-ops. */
export const MAX_TXN_OPS = 128;
/** Written by the state service with every plan besides its own objects. */
export const FOLLOWING_WRITES = 2;

/** A plan's writes when etcd caps a txn at `maxTxnOps`. */
export function planObjects(maxTxnOps: number): number {
  return maxTxnOps - 1 - FOLLOWING_WRITES;
}

export const DEFAULT_PLAN_OBJECTS = planObjects(MAX_TXN_OPS);

/**
 * The plan size a refusal for size asks for (its `max_objects` less
 * FOLLOWING_WRITES), or null when it is another refusal.
 */
export function refusedCap(code: string, metadata: Readonly<Record<string, string>>): number | null {
  if (code !== "INVALID_ARGUMENT") return null;
  const raw = metadata.max_objects ?? "";
  if (!/^-?\d+$/.test(raw.trim())) return null;
  return Math.max(1, parseInt(raw, 10) - FOLLOWING_WRITES);
}

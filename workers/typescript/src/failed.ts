/**
 * What the planner does with a failed allocation (pure): Nomad's reconciler
 * `updateByReschedulable` and `createRescheduleLaterEvals`. The Python
 * reference: drover.worker.failed.
 *
 * A failed allocation of the job's current version, still meant to run, is
 * judged by its group's reschedule policy at the snapshot's time:
 * - now: allowed and due (within 1 s), or this evaluation is the follow-up
 *   made for it: stopped and a replacement of the same name placed;
 * - later: allowed, not due, and no follow-up exists yet: the plan creates
 *   `alloc-failure` evaluations due then (those within 5 s share one) and
 *   records each in the allocation's followup_eval_id;
 * - keep: spent or disabled, a follow-up pending, or the allocation belongs
 *   to the job's failed deployment.
 */
import * as reschedule from "./reschedule";
import type { Policy } from "./reschedule";
import { DeploymentStatus, EvaluationStatus, JobType, type Allocation, type Deployment, Evaluation, type Job, type RescheduleTracker } from "./types";

export const TRIGGER = "alloc-failure";
export const LATER_DESCRIPTION = "created for delayed rescheduling";
export const STOP_DESCRIPTION = "alloc was rescheduled because it failed";

export type Verdict = "now" | "later" | "keep";

export interface Judgement {
  verdict: Verdict;
  /** When the reschedule is due (0 when never). */
  at: number;
}

export function judge(a: Allocation, policy: Policy | null, evalId: string, now: number,
  deployment: Deployment | null): Judgement {
  if (deployment !== null && deployment.status === DeploymentStatus.DEPLOYMENT_STATUS_FAILED
    && a.deploymentId === deployment.id) return { verdict: "keep", at: 0 };
  const [at, ok] = reschedule.allocNextTime(policy, a);
  if (!ok) return { verdict: "keep", at: 0 };
  if ((evalId && a.followupEvalId === evalId) || at - now <= reschedule.NOW_WINDOW) return { verdict: "now", at };
  if (!a.followupEvalId) return { verdict: "later", at };
  return { verdict: "keep", at };
}

/** The tracker the replacement of `a` carries. */
export function replacementTracker(policy: Policy | null, a: Allocation, now: number): RescheduleTracker {
  return reschedule.trackerProto(reschedule.trackerForReplacement(
    policy, reschedule.eventsOf(a), a.id, a.nodeId, reschedule.failTime(a), now));
}

export function jobTypeName(t: JobType): string {
  switch (t) {
    case JobType.JOB_TYPE_BATCH: return "batch";
    case JobType.JOB_TYPE_SYSTEM: return "system";
    case JobType.JOB_TYPE_SERVICE: return "service";
    default: return "unspecified";
  }
}

/**
 * The follow-up evaluations for allocations due later, and the
 * allocations' new values naming theirs in followup_eval_id.
 */
export function laterEvals(job: Job, evalId: string, due: ReadonlyArray<[number, Allocation]>,
  newId: () => string): [Evaluation[], Allocation[]] {
  const byId = new Map(due.map(([, a]) => [a.id, a]));
  const evals: Evaluation[] = [];
  const updates: Allocation[] = [];
  for (const [at, ids] of reschedule.batchLater(due.map(([t, a]) => [t, a.id] as [number, string]))) {
    const ev = Evaluation.fromPartial({
      id: newId(), namespace: job.namespace, priority: job.priority || 50, type: jobTypeName(job.type),
      jobId: job.id, jobModifyIndex: job.jobModifyIndex, triggeredBy: TRIGGER, previousEval: evalId,
      status: EvaluationStatus.EVALUATION_STATUS_PENDING, statusDescription: LATER_DESCRIPTION,
      waitUntil: reschedule.timestamp(at),
    });
    evals.push(ev);
    for (const id of ids) updates.push({ ...structuredClone(byId.get(id)!), followupEvalId: ev.id });
  }
  return [evals, updates];
}

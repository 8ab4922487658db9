/**
 * Allocations the deployment watcher marked to reschedule (pure; the
 * planner's hook). The Python reference: drover.worker.unhealthy.
 *
 * An unhealthy running allocation of an active deployment that the watcher
 * marked (desired_transition.reschedule) is replaced now while its group's
 * policy allows another attempt, unless it belongs to the job's failed
 * deployment; the replacement's tracker counts the fail time as now.
 */
import * as reschedule from "./reschedule";
import type { Policy } from "./reschedule";
import { DeploymentStatus, type Allocation, type Deployment, type RescheduleTracker } from "./types";

export function marked(a: Allocation): boolean {
  return !!a.desiredTransition?.reschedule;
}

export function replaceNow(a: Allocation, policy: Policy | null, now: number, deployment: Deployment | null): boolean {
  if (deployment !== null && deployment.status === DeploymentStatus.DEPLOYMENT_STATUS_FAILED
    && a.deploymentId === deployment.id) return false;
  return reschedule.eligible(policy, reschedule.eventsOf(a), now);
}

export function replacementTracker(policy: Policy | null, a: Allocation, now: number): RescheduleTracker {
  return reschedule.trackerProto(reschedule.trackerForReplacement(
    policy, reschedule.eventsOf(a), a.id, a.nodeId, now, now));
}

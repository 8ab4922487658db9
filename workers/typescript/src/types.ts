/**
 * The generated API types and enums the worker uses, in one place (they
 * are generated from protos/ into the @drover/api package; never edited).
 */
export {
  AllocClientStatus,
  AllocDesiredStatus,
  type AllocDeploymentStatus,
  Allocation,
  type RescheduleEvent,
  type RescheduleTracker,
} from "@drover/api/drover/types/v1/allocation";
export { DeploymentStatus, type Deployment } from "@drover/api/drover/types/v1/deployment";
export { EvaluationStatus, Evaluation } from "@drover/api/drover/types/v1/evaluation";
export {
  JobType,
  type Job,
  type ReschedulePolicy,
  type Resources,
  type Task,
  type TaskGroup,
} from "@drover/api/drover/types/v1/job";
export { NodeSchedulingEligibility, NodeStatus, type Node } from "@drover/api/drover/types/v1/node";
export type { Duration } from "@drover/api/google/protobuf/duration";
export type { Timestamp } from "@drover/api/google/protobuf/timestamp";

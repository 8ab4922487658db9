/**
 * A test helper (not production code): reads snapshots as JSON lines on
 * stdin (the job, versions, deployment, allocations and nodes as base64 of
 * their protobuf encoding, plus nodeUsed, evalId, now, maxOps), plans each
 * with computePlan (the candidate nodes left in their order) and writes the plan as one JSON line, its messages
 * encoded the same way. tests/unit/worker/test_ts_planner_parity.py compares
 * it with the reference planner's plan of the same snapshot.
 */
import { createInterface } from "node:readline";
import { Allocation } from "@drover/api/drover/types/v1/allocation";
import { Deployment } from "@drover/api/drover/types/v1/deployment";
import { Evaluation } from "@drover/api/drover/types/v1/evaluation";
import { Job } from "@drover/api/drover/types/v1/job";
import { Node } from "@drover/api/drover/types/v1/node";
import { computePlan } from "../src/planner";
import type { Rng } from "../src/rng";

/** Leaves the candidates in the snapshot's order (as the Python side does). */
const unshuffled: Rng = { next: () => 1 - 1e-9 };

interface Input {
  job: string | null;
  versions: string[];
  deployment: string | null;
  allocs: string[];
  nodes: string[];
  nodeUsed: Record<string, { cpu: number; memoryMb: number }>;
  evalId: string;
  now: number;
  maxOps: number;
}

const bytes = (b64: string): Uint8Array => Buffer.from(b64, "base64");
const b64 = (u: Uint8Array): string => Buffer.from(u).toString("base64");

createInterface({ input: process.stdin }).on("line", (line) => {
  const inp = JSON.parse(line) as Input;
  const job = inp.job === null ? null : Job.decode(bytes(inp.job));
  const versions = inp.versions.map((v) => Job.decode(bytes(v)));
  let n = 0;
  const plan = computePlan({
    namespace: "default", jobId: job?.id ?? "", job, versions: new Map(versions.map((v) => [v.version, v])),
    deployment: inp.deployment === null ? null : Deployment.decode(bytes(inp.deployment)),
    allocs: inp.allocs.map((a) => Allocation.decode(bytes(a))), nodes: inp.nodes.map((x) => Node.decode(bytes(x))),
    nodeUsed: new Map(Object.entries(inp.nodeUsed)), evalId: inp.evalId, now: inp.now,
  }, { rng: unshuffled, newId: () => `new-${n++}`, maxOps: inp.maxOps });
  process.stdout.write(`${JSON.stringify({
    placements: plan.placements.map((a) => b64(Allocation.encode(a).finish())),
    updates: plan.updates.map((a) => b64(Allocation.encode(a).finish())),
    evaluations: plan.evaluations.map((e) => b64(Evaluation.encode(e).finish())),
    queued: Object.fromEntries(plan.queued), more: plan.more,
  })}\n`);
});

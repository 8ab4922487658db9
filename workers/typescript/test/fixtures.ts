/** Builders of jobs, nodes, deployments and allocations for the planner's tests. */
import { Allocation } from "@drover/api/drover/types/v1/allocation";
import { Deployment, DeploymentStatus } from "@drover/api/drover/types/v1/deployment";
import { Job, JobType } from "@drover/api/drover/types/v1/job";
import { Node, NodeStatus } from "@drover/api/drover/types/v1/node";
import { AllocClientStatus, AllocDesiredStatus } from "@drover/api/drover/types/v1/allocation";
import { add, vecOf, ZERO, type Vec } from "../src/resources";
import type { Snapshot } from "../src/snapshot";

export function job(o: { version?: bigint; count?: number; canary?: number; maxParallel?: number; image?: string;
  type?: JobType; cpu?: number } = {}): Job {
  return Job.fromPartial({
    id: "web", namespace: "default", version: o.version ?? 0n, type: o.type ?? JobType.JOB_TYPE_SERVICE,
    datacenters: ["dc1"],
    taskGroups: [{
      name: "g", count: o.count ?? 3, update: { maxParallel: o.maxParallel ?? 1, canary: o.canary ?? 0 },
      tasks: [{ name: "t", driver: "sim", config: { image: o.image ?? "v1" },
        resources: { cpu: o.cpu ?? 100, memoryMb: 300 } }],
    }],
  });
}

export function nodes(n: number, cpu = 1000, mem = 4000): Node[] {
  return Array.from({ length: n }, (_, i) => Node.fromPartial({
    id: `n${i}`, datacenter: "dc1", status: NodeStatus.NODE_STATUS_READY, resources: { cpu, memoryMb: mem },
  }));
}

export function deployment(version: bigint, canaries = 0, promoted = false,
  status = DeploymentStatus.DEPLOYMENT_STATUS_RUNNING): Deployment {
  return Deployment.fromPartial({
    id: `d${version}`, jobId: "web", jobVersion: version, status,
    taskGroups: { g: { desiredCanaries: canaries, desiredTotal: 3, promoted } },
  });
}

export function running(j: Job, n: number, o: { node?: string; healthy?: boolean; dep?: string; start?: number;
  status?: AllocClientStatus } = {}): Allocation[] {
  const start = o.start ?? 0;
  return Array.from({ length: n }, (_, k) => Allocation.fromPartial({
    id: `v${j.version}-${start + k}`, namespace: "default", jobId: "web", jobVersion: j.version, taskGroup: "g",
    name: `web.g[${start + k}]`, nodeId: o.node ?? "n0", desiredStatus: AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN,
    clientStatus: o.status ?? AllocClientStatus.ALLOC_CLIENT_STATUS_RUNNING, deploymentId: o.dep ?? "",
    resources: { cpu: 100, memoryMb: 300 },
    deploymentStatus: o.healthy === undefined ? undefined : { healthy: o.healthy, canary: false, modifyIndex: 0n },
  }));
}

export function snap(j: Job | null, o: { allocs?: Allocation[]; nodes?: Node[]; dep?: Deployment; versions?: Job[];
  now?: number; evalId?: string } = {}): Snapshot {
  const allocs = o.allocs ?? [];
  const used = new Map<string, Vec>();
  for (const a of allocs) used.set(a.nodeId, add(used.get(a.nodeId) ?? ZERO, vecOf(a.resources)));
  const versions = new Map((o.versions ?? []).map((v) => [v.version, v]));
  if (j !== null) versions.set(j.version, j);
  return {
    namespace: "default", jobId: "web", job: j, versions, deployment: o.dep ?? null, allocs, nodes: o.nodes ?? nodes(3),
    nodeUsed: used, evalId: o.evalId ?? "e1", now: o.now ?? 1_000_000,
  };
}

export function ids(): () => string {
  let c = 0;
  return () => `new-${c++}`;
}

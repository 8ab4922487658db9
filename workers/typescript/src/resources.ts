/**
 * Resource arithmetic (pure): what an allocation reserves and a node offers.
 *
 * A task that leaves its resources out (or sets 0) asks for Nomad's
 * defaults: 100 MHz of CPU and 300 MB of memory. An allocation reserves the
 * sum of its task group's tasks. A node whose resources are unset offers
 * nothing. (The Python reference: drover.worker.resources.)
 */
import { AllocClientStatus, AllocDesiredStatus, type Allocation, type Resources, type TaskGroup } from "./types";

export const DEFAULT_CPU_MHZ = 100;
export const DEFAULT_MEMORY_MB = 300;

/** CPU (MHz) and memory (MB). */
export interface Vec {
  readonly cpu: number;
  readonly memoryMb: number;
}

export const ZERO: Vec = Object.freeze({ cpu: 0, memoryMb: 0 });

export function vec(cpu: number, memoryMb: number): Vec {
  return { cpu, memoryMb };
}

export function vecOf(res: Resources | undefined): Vec {
  return res ? { cpu: res.cpu, memoryMb: res.memoryMb } : ZERO;
}

export function add(a: Vec, b: Vec): Vec {
  return { cpu: a.cpu + b.cpu, memoryMb: a.memoryMb + b.memoryMb };
}

export function sub(a: Vec, b: Vec): Vec {
  return { cpu: a.cpu - b.cpu, memoryMb: a.memoryMb - b.memoryMb };
}

export function fitsIn(a: Vec, capacity: Vec): boolean {
  return a.cpu <= capacity.cpu && a.memoryMb <= capacity.memoryMb;
}

export function toResources(v: Vec): Resources {
  return { cpu: v.cpu, memoryMb: v.memoryMb };
}

/**
 * What one allocation of `tg` reserves (defaults for unset fields; a group
 * without tasks still reserves one default task).
 */
export function groupAsk(tg: TaskGroup): Vec {
  const tasks = tg.tasks.length ? tg.tasks : [{ resources: undefined }];
  let cpu = 0;
  let memoryMb = 0;
  for (const task of tasks) {
    cpu += task.resources?.cpu || DEFAULT_CPU_MHZ;
    memoryMb += task.resources?.memoryMb || DEFAULT_MEMORY_MB;
  }
  return { cpu, memoryMb };
}

const TERMINAL_CLIENT = new Set([
  AllocClientStatus.ALLOC_CLIENT_STATUS_COMPLETE,
  AllocClientStatus.ALLOC_CLIENT_STATUS_FAILED,
  AllocClientStatus.ALLOC_CLIENT_STATUS_LOST,
]);

/** Desired to run and not terminal on the client: it holds resources. */
export function isLive(a: Allocation): boolean {
  return a.desiredStatus === AllocDesiredStatus.ALLOC_DESIRED_STATUS_RUN && !TERMINAL_CLIENT.has(a.clientStatus);
}

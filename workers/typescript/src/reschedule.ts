/**
 * Nomad's reschedule policy: defaults, delays and eligibility (pure). The
 * Python reference: drover.worker.reschedule (its module doc states the
 * rules; the policy's validation is the state service's, not the worker's).
 *
 * Every field a group's `reschedule` block leaves unset takes the job
 * type's default (Nomad's Canonicalize): service: delay 30s, exponential,
 * max_delay 1h, unlimited; batch: 1 attempt in 24h, delay 5s, constant;
 * system: no policy, never rescheduled. Times are seconds.
 */
import { JobType, type Allocation, type Duration, type ReschedulePolicy, type RescheduleTracker, type Timestamp } from "./types";

export const CONSTANT = "constant";
export const EXPONENTIAL = "exponential";
export const FIBONACCI = "fibonacci";
/** An unlimited policy's replacement keeps this many past events. */
export const MAX_PAST_EVENTS = 5;
/** A reschedule due within this many seconds is done now (rescheduleWindowSize). */
export const NOW_WINDOW = 1.0;
/** Reschedules due within this many seconds share one follow-up evaluation. */
export const LATER_BATCH_WINDOW = 5.0;
const HOUR = 3600;

/** A resolved reschedule policy (every field set; durations in seconds). */
export interface Policy {
  attempts: number;
  interval: number;
  delay: number;
  delayFunction: string;
  maxDelay: number;
  unlimited: boolean;
}

export const SERVICE_DEFAULT: Policy = Object.freeze({
  attempts: 0, interval: 0, delay: 30, delayFunction: EXPONENTIAL, maxDelay: HOUR, unlimited: true,
});
export const BATCH_DEFAULT: Policy = Object.freeze({
  attempts: 1, interval: 24 * HOUR, delay: 5, delayFunction: CONSTANT, maxDelay: 0, unlimited: false,
});

export function enabled(p: Policy): boolean {
  return p.attempts > 0 || p.unlimited;
}

/** The job type's default policy; null for system jobs (never rescheduled). */
export function defaultFor(jobType: JobType): Policy | null {
  if (jobType === JobType.JOB_TYPE_BATCH) return BATCH_DEFAULT;
  if (jobType === JobType.JOB_TYPE_SYSTEM) return null;
  return SERVICE_DEFAULT;
}

export function secs(d: Duration | undefined): number {
  return d ? Number(d.seconds) + d.nanos / 1e9 : 0;
}

/** The block's set fields merged over the type's default (Nomad's Merge). */
export function resolve(jobType: JobType, block: ReschedulePolicy | undefined): Policy | null {
  const base = defaultFor(jobType);
  if (base === null || block === undefined) return base;
  return {
    attempts: block.attempts ?? base.attempts,
    interval: block.interval !== undefined ? secs(block.interval) : base.interval,
    delay: block.delay !== undefined ? secs(block.delay) : base.delay,
    delayFunction: block.delayFunction ?? base.delayFunction,
    maxDelay: block.maxDelay !== undefined ? secs(block.maxDelay) : base.maxDelay,
    unlimited: block.unlimited ?? base.unlimited,
  };
}

/** One past reschedule (Nomad's RescheduleEvent; times in seconds). */
export interface Event {
  time: number;
  prevAllocId: string;
  prevNodeId: string;
  delay: number;
}

/** The delay before the next reschedule (Nomad's `Allocation.NextDelay`). */
export function nextDelay(p: Policy | null, events: readonly Event[], failTime: number): number {
  if (p === null) return 0;
  if (!events.length) return p.delay;
  const last = events[events.length - 1];
  let delay: number;
  if (p.delayFunction === EXPONENTIAL) {
    delay = last.delay * 2;
  } else if (p.delayFunction === FIBONACCI) {
    if (events.length < 2) delay = p.delay;
    else if (events[events.length - 2].delay === p.maxDelay && last.delay === p.delay) delay = last.delay; // reset: again
    else delay = last.delay + events[events.length - 2].delay;
  } else {
    return p.delay;
  }
  if (p.maxDelay > 0 && delay > p.maxDelay) {
    delay = p.maxDelay;
    // It ran for longer than the cap since its last reschedule: start over.
    if (failTime - last.time > delay) delay = p.delay;
  }
  return delay;
}

function attempted(p: Policy, events: readonly Event[], failTime: number): number {
  return events.filter((e) => failTime - e.time < p.interval).length;
}

/** Whether another reschedule is allowed (`RescheduleEligible`). */
export function eligible(p: Policy | null, events: readonly Event[], failTime: number): boolean {
  if (p === null || !enabled(p)) return false;
  if (p.unlimited || !events.length) return true;
  return attempted(p, events, failTime) < p.attempts;
}

/** [when, allowed] for the next reschedule (`NextRescheduleTime`). */
export function nextRescheduleTime(p: Policy | null, events: readonly Event[], failTime: number): [number, boolean] {
  if (p === null || !enabled(p) || failTime <= 0) return [0, false];
  const delay = nextDelay(p, events, failTime);
  const at = failTime + delay;
  if (p.unlimited || !events.length) return [at, true];
  return [at, attempted(p, events, failTime) < p.attempts && delay < p.interval];
}

/** The events a replacement of `prevId` carries (`updateRescheduleTracker`). */
export function trackerForReplacement(p: Policy | null, prevEvents: readonly Event[], prevId: string,
  prevNode: string, failTime: number, now: number): Event[] {
  const kept = p !== null && p.attempts > 0
    ? prevEvents.filter((e) => p.interval > 0 && now - e.time <= p.interval)
    : prevEvents.slice(-MAX_PAST_EVENTS);
  return [...kept, { time: now, prevAllocId: prevId, prevNodeId: prevNode, delay: nextDelay(p, prevEvents, failTime) }];
}

/**
 * [time, alloc id] pairs grouped into follow-up evaluations: sorted by
 * time, each batch due at its first time and holding every one due within
 * LATER_BATCH_WINDOW of it.
 */
export function batchLater(due: ReadonlyArray<[number, string]>): Array<[number, string[]]> {
  const out: Array<[number, string[]]> = [];
  const sorted = [...due].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  for (const [at, id] of sorted) {
    const last = out[out.length - 1];
    if (last && at - last[0] <= LATER_BATCH_WINDOW) last[1].push(id);
    else out.push([at, [id]]);
  }
  return out;
}

// -- allocations as protos ----------------------------------------------------

export function tsSecs(t: Timestamp | undefined): number {
  return t ? Number(t.seconds) + t.nanos / 1e9 : 0;
}

export function timestamp(seconds: number): Timestamp {
  const ns = Math.round(seconds * 1e9);
  const s = Math.floor(ns / 1e9);
  return { seconds: BigInt(s), nanos: Math.round(ns - s * 1e9) };
}

export function duration(seconds: number): Duration {
  const s = Math.trunc(seconds);
  return { seconds: BigInt(s), nanos: Math.round((seconds - s) * 1e9) };
}

export function eventsOf(a: Allocation): Event[] {
  return (a.rescheduleTracker?.events ?? []).map((e) => ({
    time: tsSecs(e.rescheduleTime), prevAllocId: e.prevAllocId, prevNodeId: e.prevNodeId, delay: secs(e.delay),
  }));
}

/** When its tasks finished (`LastEventTime`): finished_at, else the last modification. */
export function failTime(a: Allocation): number {
  return a.finishedAt !== undefined ? tsSecs(a.finishedAt) : tsSecs(a.modifyTime);
}

export function trackerProto(events: readonly Event[]): RescheduleTracker {
  return {
    events: events.map((e) => ({
      rescheduleTime: timestamp(e.time), prevAllocId: e.prevAllocId, prevNodeId: e.prevNodeId, delay: duration(e.delay),
    })),
  };
}

/** nextRescheduleTime of a failed allocation. */
export function allocNextTime(p: Policy | null, a: Allocation): [number, boolean] {
  return nextRescheduleTime(p, eventsOf(a), failTime(a));
}

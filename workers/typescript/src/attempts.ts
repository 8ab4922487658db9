/**
 * How often a worker plans one evaluation again after a partial commit
 * (pure): Nomad's retryMax. At most 5 (service) or 2 (batch) plans in a row
 * that make no progress; a plan that placed or updated anything resets the
 * count. When they run out the evaluation ends with a blocked evaluation
 * triggered by max-plan-attempts. The Python reference: drover.worker.attempts.
 */
export const MAX_SERVICE_ATTEMPTS = 5;
export const MAX_BATCH_ATTEMPTS = 2;
export const TRIGGER = "max-plan-attempts";
export const DESCRIPTION = "created due to placement conflicts";

export function attemptLimit(scheduler: string): number {
  return scheduler === "batch" ? MAX_BATCH_ATTEMPTS : MAX_SERVICE_ATTEMPTS;
}

export class Attempts {
  spent = 0;
  constructor(readonly limit: number) {}

  /** Count one partial commit; true while another plan may be tried. */
  after(progress: boolean): boolean {
    this.spent = progress ? 0 : this.spent + 1;
    return this.spent < this.limit;
  }
}

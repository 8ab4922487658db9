"""How often a worker plans one evaluation again after a partial commit
(pure): Nomad's ``retryMax`` in the generic scheduler.

A plan the state service committed only in part names the refused nodes
and an index to refresh at; the worker re-reads state at that index and
plans again (the whole reconcile: what committed is now existing, so only
the refused placements are planned again, elsewhere if the node is full).
At most ``maxServiceScheduleAttempts`` = 5 (service) or
``maxBatchScheduleAttempts`` = 2 (batch) plans in a row make no progress;
a plan that placed or updated anything resets the count. When they run
out, the evaluation ends with a blocked evaluation triggered by
``max-plan-attempts`` ("created due to placement conflicts"), which the
state service unblocks when capacity changes.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SERVICE_ATTEMPTS = 5
MAX_BATCH_ATTEMPTS = 2
TRIGGER = "max-plan-attempts"
DESCRIPTION = "created due to placement conflicts"


def attempt_limit(scheduler: str) -> int:
    return MAX_BATCH_ATTEMPTS if scheduler == "batch" else MAX_SERVICE_ATTEMPTS


@dataclass
class Attempts:
    """Plans of one evaluation that were committed only in part."""

    limit: int
    spent: int = 0

    def after(self, progress: bool) -> bool:
        """Count one partial commit; True while another plan may be tried."""
        self.spent = 0 if progress else self.spent + 1
        return self.spent < self.limit

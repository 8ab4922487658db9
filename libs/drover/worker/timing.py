"""Where a worker's time goes: seconds and counts per step of a plan.

The steps, in the order an evaluation takes them: ``read`` (its job's
GetJobSnapshot round trip and the delta merge; it runs ahead of the
evaluation before, so only ``read_wait`` is on the path), ``read_wait`` (the
evaluation waiting for its reads; a later round of one evaluation reads on
the path, its view copy included), ``snapshot`` (the view's nodes and usage
copied for the planner), ``pack`` (the planner: :func:`compute_plan`),
``submit`` (the SubmitPlan round trip) and ``view_wait`` (waiting for the
view to reach a committed plan's index before the next round). A benchmark
reads them from the worker's log: ``drover worker --log-plan-timing N``
logs the running totals every N seconds, one JSON object after
:data:`LOG_PREFIX`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

STEPS = ("read", "read_wait", "snapshot", "pack", "submit", "view_wait")
#: What a timing line of the worker's log starts with (then the JSON).
LOG_PREFIX = "plan timing "


@dataclass
class StepTimes:
    """Running totals per step: seconds spent and times taken."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STEPS, 0.0))
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - t
            self.counts[name] += 1

    def line(self) -> str:
        """The totals as one log line (:data:`LOG_PREFIX`, then JSON)."""
        return LOG_PREFIX + json.dumps(
            {s: {"n": self.counts[s], "s": round(self.seconds[s], 3)} for s in STEPS},
            separators=(",", ":"))


def parse(line: str) -> dict[str, dict[str, float]] | None:
    """A timing line's totals (:meth:`StepTimes.line`), None for any other line."""
    at = line.find(LOG_PREFIX)
    if at < 0:
        return None
    try:
        got = json.loads(line[at + len(LOG_PREFIX):])
    except ValueError:
        return None
    return got if isinstance(got, dict) else None

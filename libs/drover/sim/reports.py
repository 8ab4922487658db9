"""How simulated nodes pack their allocation reports into UpdateAllocations calls.

One call is one txn. Besides the reports themselves (one object each), the
state service writes the status and summary of every job they touch
(:data:`drover.worker.plan_size.FOLLOWING_WRITES` each) in the same txn, and
refuses a call whose txn would pass the cluster's size. :func:`pack` fills
each call up to ``room`` objects counted that way, so the calls are as few
as the cluster's ``--max-txn-ops`` allows and none is refused for size.

Invariants: every report is in exactly one call, and the calls, made one
after another, keep each node's reports in order (a node's reports may be
split across two calls); no call passes ``room`` unless one report with
its job's writes alone does (``room`` < 1 + FOLLOWING_WRITES: never at
etcd's sizes).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from drover.worker.plan_size import FOLLOWING_WRITES

R = TypeVar("R")
Call = list[tuple[str, list[R]]]


def pack(due: Mapping[str, Sequence[tuple[Hashable, R]]], room: int) -> list[Call[R]]:
    """``due``: each node's reports as (their job, report). The calls to make,
    each a list of (node, its reports)."""
    calls: list[Call[R]] = []
    call: Call[R] = []
    jobs: set[Hashable] = set()
    size = 0

    def flush() -> None:
        nonlocal call, jobs, size
        if call:
            calls.append(call)
        call, jobs, size = [], set(), 0

    for node_id, reports in due.items():
        part: list[R] = []
        for job, report in reports:
            cost = 1 + (0 if job in jobs else FOLLOWING_WRITES)
            if size + cost > room and (call or part):
                if part:
                    call.append((node_id, part))
                    part = []
                flush()
                cost = 1 + FOLLOWING_WRITES
            jobs.add(job)
            size += cost
            part.append(report)
        if part:
            call.append((node_id, part))
    flush()
    return calls

"""Simulated nodes fill each UpdateAllocations call to the cluster's txn size
(:mod:`drover.sim.reports`): every report once, in order, no call too big."""

from __future__ import annotations

import random

import pytest

from drover.sim.reports import pack
from drover.worker.plan_size import FOLLOWING_WRITES


def _cost(call: list[tuple[str, list[tuple[str, tuple[int, int]]]]]) -> int:
    reports = [r for _, rs in call for r in rs]
    return len(reports) + FOLLOWING_WRITES * len({job for job, _ in reports})


@pytest.mark.parametrize("seed", range(20))
def test_every_report_once_in_order_and_no_call_past_the_room(seed: int) -> None:
    rng = random.Random(seed)
    room = rng.choice([3, 10, 127, 1023])
    due = {f"n{i}": [(f"j{rng.randrange(8)}", (i, k)) for k in range(rng.randrange(1, 40))]
           for i in range(rng.randrange(1, 60))}
    # Each report carries its job, so the packing's cost can be checked.
    calls = pack({n: [(job, (job, r)) for job, r in rs] for n, rs in due.items()}, room)
    for call in calls:
        assert _cost(call) <= room
    sent: dict[str, list[tuple[str, tuple[int, int]]]] = {}
    for call in calls:
        for node_id, rs in call:
            sent.setdefault(node_id, []).extend(rs)
    assert sent == due


def test_reports_of_one_job_fill_one_call() -> None:
    due = {f"n{i}": [("web", i)] for i in range(500)}
    calls = pack(due, 1023)
    assert len(calls) == 1 and len(calls[0]) == 500
    assert [len(c) for c in pack(due, 127)] == [125, 125, 125, 125]

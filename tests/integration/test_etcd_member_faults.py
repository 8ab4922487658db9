"""drover keeps serving while one of three etcd members is frozen or killed.

Real processes (``drover serve`` state + two brokers, pinned to member 0 of
a real three-member etcd), a writer and four scheduler workers; see
:mod:`drover.dev.etcd_drill`. Per fault: writes and Dequeues resume while
the member is still frozen or down (the longest gap is shorter than the
fault), nothing written is lost, nothing is acked twice; killing the etcd
leader does not change the broker leader at default settings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from drover.dev.etcd_drill import Drill, DrillConfig

pytestmark = pytest.mark.slow

FAULT_SECONDS = 5.0


@pytest.fixture(scope="module")
async def drill() -> AsyncIterator[Drill]:
    async with Drill(DrillConfig(fault_seconds=FAULT_SECONDS, settle=3.0)) as d:
        yield d


@pytest.mark.parametrize("fault", ["stop-follower-in-use", "stop-leader-in-use", "kill-leader"])
async def test_member_fault(drill: Drill, fault: str) -> None:
    r = await drill.run(fault)
    # Resumed without waiting for the member to come back.
    assert r.write_gap < FAULT_SECONDS, r
    assert r.dequeue_gap < FAULT_SECONDS, r
    assert r.lost == 0, r
    assert r.duplicates == 0, r
    # Every failed write said it may have been applied (never a silent loss).
    assert r.writes_failed == r.outcome_unknown, r
    if fault == "kill-leader":
        assert r.leader_changes == 0, r

"""Conformance: two workers racing for the same nodes' last room (Nomad's
plan applier tests), judged by what the cluster holds."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from conformance_harness import BLOCKED, WITHIN, Cluster, service
from polling import until

pytestmark = pytest.mark.conformance

JOBS = [f"race-{i}" for i in range(10)]


def test_two_workers_racing_for_the_last_room_never_overcommit_and_re_plan(
        cluster: Cluster) -> None:
    """Nomad: TestPlanApply_EvalPlan_Partial (a plan whose node has no room
    left is committed for the other nodes; the refused part goes back to
    the worker with a refresh index) and TestWorker_SubmitPlan's re-plan:
    ten jobs of two allocations each, submitted at once to two workers,
    need exactly the room of five nodes. They are registered all at once,
    so the workers' scheduling loops take their evaluations in the same
    moments and plan against the same free room (a race is likely, not
    forced: the judgement holds either way). Every allocation is
    placed, no node holds more than it has, and a seventh job finds no
    room: blocked, not squeezed in."""
    second = cluster.start_worker("worker-race")
    try:
        with cluster.nodes("race", 5, "conf-race", cpu=1000, memory=1024):
            with ThreadPoolExecutor(len(JOBS)) as pool:
                list(pool.map(lambda j: cluster.run_job(
                    service(j, ["conf-race"], 2, cpu=250, memory=256)), JOBS))
            placed = until(lambda: (got := [a for j in JOBS for a in cluster.live(j)])
                           and len(got) == 20 and got, WITHIN, "all 20 allocations placed")
            assert Counter(a.node_id for a in placed) == {f"race-{i}": 4 for i in range(5)}
            assert all(len(cluster.live(j)) == 2 for j in JOBS)
            cluster.run_job(service("race-late", ["conf-race"], 1, cpu=250, memory=256))
            until(lambda: any(e.status == BLOCKED for e in cluster.evaluations("race-late")),
                  WITHIN, "the late job blocked")
            assert cluster.live("race-late") == []
            assert len([a for j in JOBS for a in cluster.live(j)]) == 20
    finally:
        cluster.stop(second)

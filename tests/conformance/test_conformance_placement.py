"""Conformance: where a worker places work (Nomad's scheduler tests).

Each scenario judges what the cluster holds afterwards (state reads over
gRPC), never the worker's output.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conformance_harness import BLOCKED, INELIGIBLE, WITHIN, Cluster, service
from polling import until

pytestmark = pytest.mark.conformance


def test_service_placement_spreads_over_the_jobs_datacenters(cluster: Cluster) -> None:
    """Nomad: TestServiceSched_JobRegister (every asked allocation placed,
    names job.group[0..count-1]) and TestServiceSched_EvenSpread's
    datacenters: only nodes of the job's datacenters are candidates, and
    the group is spread over them (job anti-affinity), not piled up."""
    with cluster.nodes("spa", 2, "conf-sp-a"), cluster.nodes("spb", 2, "conf-sp-b"), \
            cluster.nodes("spc", 2, "conf-sp-c"):
        cluster.run_job(service("spread", ["conf-sp-a", "conf-sp-b"], 4, cpu=200))
        live = until(lambda: (got := cluster.live("spread")) and len(got) == 4 and got,
                     WITHIN, "4 running allocations of spread")
        assert sorted(a.name for a in live) == [f"spread.g[{i}]" for i in range(4)]
        on = Counter(a.node_id for a in live)
        assert all(n.startswith(("spa-", "spb-")) for n in on), on  # never conf-sp-c
        assert {n[:3] for n in on} == {"spa", "spb"}, on  # both datacenters
        assert max(on.values()) <= 2, on
        summary = until(lambda: (s := cluster.job("spread").summary["g"]).running == 4 and s,
                        WITHIN, "the job summary counting 4 running")
        assert summary.queued == 0


def test_binpacking_fills_nodes_exactly(cluster: Cluster) -> None:
    """Nomad: TestBinPackIterator_NoExistingAlloc (scheduler/feasible): asks
    that add up to exactly the nodes' capacity are all placed, and no node
    is given more than it has."""
    with cluster.nodes("bp", 3, "conf-bp", cpu=1000, memory=1024):
        cluster.run_job(service("binpack", ["conf-bp"], 6, cpu=500, memory=512))
        live = until(lambda: (got := cluster.live("binpack")) and len(got) == 6 and got,
                     WITHIN, "6 running allocations of binpack (the nodes' exact capacity)")
        assert Counter(a.node_id for a in live) == {"bp-0": 2, "bp-1": 2, "bp-2": 2}


def test_system_job_runs_on_every_eligible_node_and_a_node_that_joins(
        cluster: Cluster) -> None:
    """Nomad: TestSystemSched_JobRegister (one allocation per node),
    TestSystemSched_JobConstraint_AddNode's ineligible node left out, and
    TestSystemSched_JobRegister_AddNode (a node that joins gets one)."""
    with cluster.nodes("sys", 3, "conf-sys"):
        cluster.set_eligible("sys-2", False)
        until(lambda: cluster.node("sys-2").scheduling_eligibility == INELIGIBLE,
              WITHIN, "sys-2 ineligible")
        spec = service("sysjob", ["conf-sys"], 1)
        spec["type"] = "system"
        cluster.run_job(spec)
        live = until(lambda: (got := cluster.live("sysjob")) and len(got) == 2 and got,
                     WITHIN, "the system job on both eligible nodes")
        assert sorted(a.node_id for a in live) == ["sys-0", "sys-1"]
        with cluster.nodes("sysnew", 1, "conf-sys"):
            live = until(lambda: (got := cluster.live("sysjob")) and len(got) == 3 and got,
                         WITHIN, "the system job on the node that joined")
            assert sorted(a.node_id for a in live) == ["sys-0", "sys-1", "sysnew-0"]
        assert all(a.node_id != "sys-2" for a in cluster.allocs("sysjob"))


def test_a_job_that_does_not_fit_is_blocked_and_placed_when_capacity_frees(
        cluster: Cluster) -> None:
    """Nomad: TestServiceSched_JobRegister_AllocFail and
    TestServiceSched_JobRegister_CreateBlockedEval (nothing fits: a blocked
    evaluation, the allocation counted queued), then
    TestBlockedEvals_UnblockEligible and TestServiceSched_EvaluateBlockedEval:
    once another job's allocation stops, the blocked job is placed."""
    with cluster.nodes("blk", 1, "conf-blk", cpu=1000, memory=1024):
        cluster.run_job(service("filler", ["conf-blk"], 1, cpu=800))
        until(lambda: len(cluster.live("filler")) == 1, WITHIN, "filler running")
        cluster.run_job(service("waiter", ["conf-blk"], 1, cpu=600))
        until(lambda: any(e.status == BLOCKED for e in cluster.evaluations("waiter")),
              WITHIN, "a blocked evaluation of waiter")
        assert cluster.live("waiter") == []
        assert cluster.job("waiter").summary["g"].queued == 1
        cluster.stop_job("filler")
        live = until(lambda: cluster.live("waiter"), WITHIN, "waiter placed once filler stopped")
        assert [a.node_id for a in live] == ["blk-0"]
        assert cluster.job("waiter").summary["g"].queued == 0

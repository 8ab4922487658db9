"""Conformance: allocations that fail, are lost or must move (Nomad's
scheduler tests), judged by what the cluster holds."""

from __future__ import annotations

import time

import pytest
from conformance_harness import FAILED, INELIGIBLE, LOST, STOP, WITHIN, Cluster, service
from polling import until

pytestmark = pytest.mark.conformance

DELAY = 5.0  # the reschedule policy's delay (Nomad's minimum)
SLACK = 10.0  # broker timer, worker, sim start on a loaded machine


def test_a_failed_allocation_is_rescheduled_after_its_policys_delay(cluster: Cluster) -> None:
    """Nomad: TestServiceSched_Reschedule_Later (a failed allocation is
    replaced only after the policy's delay, by one naming it as
    previous_allocation and carrying the reschedule tracker) and
    TestServiceSched_Reschedule_MultipleNow's attempts: once the policy's
    attempts are spent, no more replacements."""
    with cluster.nodes("rs", 2, "conf-rs"):
        cluster.run_job(service(
            "resched", ["conf-rs"], 1, meta={"sim.outcome": "crash", "sim.crash_after": "1"},
            reschedule={"attempts": 1, "interval": "1h", "delay": "5s",
                        "delay_function": "constant", "unlimited": False}))
        allocs = until(lambda: (got := cluster.allocs("resched")) and len(
            [a for a in got if a.client_status == FAILED]) == 2 and got,
            60, "the allocation and its one replacement both failed")
        time.sleep(DELAY + 2)  # long enough for a (wrong) second reschedule
        allocs = cluster.allocs("resched")
        assert len(allocs) == 2, allocs
        first = next(a for a in allocs if not a.previous_allocation)
        second = next(a for a in allocs if a.previous_allocation)
        assert second.previous_allocation == first.id and first.next_allocation == second.id
        assert second.name == first.name
        waited = second.create_time.ToDatetime().timestamp() - \
            first.finished_at.ToDatetime().timestamp()
        assert DELAY - 0.5 <= waited <= DELAY + SLACK, waited
        events = second.reschedule_tracker.events
        assert len(events) == 1 and events[0].prev_alloc_id == first.id
        assert events[0].delay.seconds == 5


def test_allocations_of_a_node_that_goes_down_are_replaced(cluster: Cluster) -> None:
    """Nomad: TestServiceSched_NodeDown: the allocations of a node marked
    down are lost and the scheduler places replacements on other nodes."""
    with cluster.nodes("lost", 3, "conf-lost"):
        cluster.run_job(service("lostjob", ["conf-lost"], 2))
        live = until(lambda: (got := cluster.live("lostjob")) and len(got) == 2 and got,
                     WITHIN, "2 running")
        gone = live[0]
        cluster.mark_down(gone.node_id)
        live = until(lambda: (got := cluster.live("lostjob")) and len(got) == 2
                     and gone.id not in {a.id for a in got} and got,
                     WITHIN, "the lost allocation replaced")
        assert all(a.node_id != gone.node_id for a in live)
        lost = next(a for a in cluster.allocs("lostjob") if a.id == gone.id)
        assert lost.client_status == LOST and lost.desired_status == STOP
        assert sorted(a.name for a in live) == ["lostjob.g[0]", "lostjob.g[1]"]


def test_a_drain_migrates_the_nodes_allocations(cluster: Cluster) -> None:
    """Nomad: TestServiceSched_NodeDrain (allocations marked to migrate are
    stopped and placed elsewhere) with TestDrainer_Simple_ServiceOnly's end:
    the drained node is empty and ineligible."""
    with cluster.nodes("dr", 3, "conf-dr"):
        cluster.run_job(service("drainjob", ["conf-dr"], 3, migrate={
            "max_parallel": 1, "min_healthy_time": "1s", "healthy_deadline": "30s"}))
        live = until(lambda: (got := cluster.live("drainjob")) and len(got) == 3 and got,
                     WITHIN, "3 running")
        target = live[0].node_id
        moved = {a.id for a in live if a.node_id == target}
        cluster.drain(target)
        live = until(lambda: (got := cluster.live("drainjob")) and len(got) == 3
                     and all(a.node_id != target for a in got) and got,
                     WITHIN, "every allocation off the drained node")
        old = [a for a in cluster.allocs("drainjob") if a.id in moved]
        assert all(a.desired_status == STOP for a in old), old
        assert all(a.previous_allocation in moved for a in live if a.previous_allocation)
        assert len([a for a in live if a.previous_allocation]) == len(moved)
        node = until(lambda: (n := cluster.node(target)) and not n.drain and n,
                     WITHIN, "the drain complete")
        assert node.scheduling_eligibility == INELIGIBLE

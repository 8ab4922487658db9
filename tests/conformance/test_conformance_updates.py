"""Conformance: job updates through deployments (Nomad's scheduler and
deployment watcher tests), judged by what the cluster holds."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conformance_harness import DEP_FAILED, SUCCESSFUL, WITHIN, Cluster, service
from polling import until

pytestmark = pytest.mark.conformance

UPDATE = {"max_parallel": 1, "min_healthy_time": "1s", "healthy_deadline": "20s",
          "progress_deadline": "2m"}


def _version(spec: dict[str, Any], v: str) -> dict[str, Any]:
    """The same job with a changed task config: a destructive update."""
    spec["task_groups"][0]["tasks"][0]["config"] = {"v": v}
    return spec


def _settled(cluster: Cluster, job_id: str, count: int, version: int) -> bool:
    healthy = cluster.healthy(job_id)
    return len(healthy) == count and all(a.job_version == version for a in healthy)


def test_rolling_update_replaces_max_parallel_at_a_time(cluster: Cluster) -> None:
    """Nomad: TestServiceSched_JobModify_Rolling (a destructive update with
    max_parallel 1 places one new allocation per step) and
    TestDeploymentWatcher_Watch_ProgressDeadline's healthy steps: the next
    step waits for the previous one's health. Judged while it rolls (at most max_parallel of
    the count down at any read) and after (every slot new, each placed by
    its own plan: distinct create indexes; the deployment successful)."""
    with cluster.nodes("roll", 3, "conf-roll"):
        spec = service("rolling", ["conf-roll"], 3, update=UPDATE)
        cluster.run_job(_version(spec, "1"))
        until(lambda: _settled(cluster, "rolling", 3, 0), WITHIN, "version 0 healthy")
        cluster.run_job(_version(spec, "2"))
        lowest = 3
        deadline = time.monotonic() + 90
        while not _settled(cluster, "rolling", 3, 1):
            assert time.monotonic() < deadline, "the rolling update did not finish"
            lowest = min(lowest, len(cluster.healthy("rolling")))
            time.sleep(0.2)
        assert lowest >= 2, f"{3 - lowest} of 3 down at once with max_parallel 1"
        new = [a for a in cluster.allocs("rolling") if a.job_version == 1]
        assert len(new) == 3 and len({a.create_index for a in new}) == 3, new
        assert sorted(a.name for a in new) == [f"rolling.g[{i}]" for i in range(3)]
        deps = until(lambda: (d := cluster.deployments_of("rolling"))
                     and d[-1].status == SUCCESSFUL and d, WITHIN, "the deployment successful")
        assert deps[-1].job_version == 1 and deps[-1].task_groups["g"].healthy_allocs == 3


def test_canary_is_placed_beside_the_old_version_and_promotion_replaces_the_rest(
        cluster: Cluster) -> None:
    """Nomad: TestServiceSched_JobModify_Canaries (an update with canary 1
    places one canary and stops nothing) and
    TestReconciler_PromoteCanaries_Unblock (after promotion the rest are
    replaced and the canary is kept)."""
    with cluster.nodes("can", 3, "conf-can"):
        spec = service("canary", ["conf-can"], 3, update={**UPDATE, "canary": 1})
        cluster.run_job(_version(spec, "1"))
        until(lambda: _settled(cluster, "canary", 3, 0), WITHIN, "version 0 healthy")
        cluster.run_job(_version(spec, "2"))
        canaries = until(lambda: [a for a in cluster.healthy("canary") if a.job_version == 1],
                         WITHIN, "the canary healthy")
        assert len(canaries) == 1 and canaries[0].deployment_status.canary
        time.sleep(3)  # a wrong worker would go on replacing
        live = cluster.live("canary")
        assert sorted(a.job_version for a in live) == [0, 0, 0, 1], live
        dep = cluster.deployments_of("canary")[-1]
        assert list(dep.task_groups["g"].placed_canaries) == [canaries[0].id]
        assert not dep.task_groups["g"].promoted
        cluster.promote(dep.id)
        until(lambda: _settled(cluster, "canary", 3, 1), WITHIN, "all three on version 1")
        assert canaries[0].id in {a.id for a in cluster.live("canary")}  # the canary stays
        until(lambda: cluster.deployments_of("canary")[-1].status == SUCCESSFUL,
              WITHIN, "the deployment successful")


def test_a_failed_deployment_auto_reverts_to_the_stable_version(cluster: Cluster) -> None:
    """Nomad: TestWatcher_SetAllocHealth_Unhealthy_Rollback (deploymentwatcher)
    and TestServiceSched_JobModify_Rolling's stop-and-place: an update whose
    allocations never become healthy fails its deployment, the job is
    registered again at its last stable version's spec, and the worker
    rolls the cluster back to it."""
    with cluster.nodes("rev", 2, "conf-rev"):
        good = _version(service("revert", ["conf-rev"], 2, update={
            **UPDATE, "healthy_deadline": "3s", "auto_revert": True},
            reschedule={"attempts": 0, "unlimited": False}), "1")
        cluster.run_job(good)
        until(lambda: _settled(cluster, "revert", 2, 0), WITHIN, "version 0 healthy")
        # Its allocations healthy is not yet its deployment successful: until
        # the watcher writes that (and marks version 0 stable), registering
        # version 1 cancels the deployment and leaves no stable version to
        # revert to (Nomad's watcher, as drover's: "no stable job version to
        # auto revert to"). The revert is of a stable version: wait for it.
        until(lambda: (d := cluster.deployments_of("revert")) and d[-1].status == SUCCESSFUL
              and cluster.job("revert").stable, WITHIN, "version 0 stable")
        bad = _version(service("revert", ["conf-rev"], 2, update={
            **UPDATE, "healthy_deadline": "3s", "auto_revert": True},
            reschedule={"attempts": 0, "unlimited": False},
            meta={"sim.outcome": "never_healthy"}), "2")
        cluster.run_job(bad)
        until(lambda: any(d.status == DEP_FAILED for d in cluster.deployments_of("revert")),
              WITHIN, "version 1's deployment failed")
        job = until(lambda: (j := cluster.job("revert")).version == 2 and j,
                    WITHIN, "the job reverted (version 2)",
                    detail=lambda: [d.status_description
                                    for d in cluster.deployments_of("revert")])
        assert job.task_groups[0].tasks[0].config["v"] == "1"
        assert "sim.outcome" not in job.task_groups[0].meta
        until(lambda: _settled(cluster, "revert", 2, 2), 90, "version 2 (the revert) healthy")

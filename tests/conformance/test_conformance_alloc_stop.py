"""Conformance: ``alloc stop`` is a migration for every job type (Nomad's
``Alloc.Stop`` marks ``DesiredTransition.Migrate``), judged by what the
cluster holds: the stopped allocation and its replacement name each other."""

from __future__ import annotations

from typing import Any

import pytest
from conformance_harness import NS, STOP, WITHIN, Cluster, service
from polling import until

from drover.api.state.v1 import state_pb2

pytestmark = pytest.mark.conformance


def _spec(kind: str, job_id: str, dc: str) -> dict[str, Any]:
    spec = service(job_id, [dc], 1, meta={"sim.run_for": "600"})
    spec["type"] = kind
    return spec


@pytest.mark.parametrize("kind", ["service", "batch", "system"])
def test_an_alloc_stop_is_replaced_by_one_naming_it(cluster: Cluster, kind: str) -> None:
    """Nomad: ``Alloc.Stop`` marks ``Migrate`` only, and the reconciler
    migrates a marked allocation of any type (TestReconciler_MigrateBatchAllocs:
    stopped and placed again with its name, ``PreviousAllocation`` naming
    it; the state store sets its ``NextAllocation``); the system scheduler
    chains the node's new allocation to the stopped one, on the same node."""
    job_id = f"stop-{kind}"
    with cluster.nodes(f"as{kind[:3]}", 2, f"conf-as-{kind}"):
        cluster.run_job(_spec(kind, job_id, f"conf-as-{kind}"))
        first = until(lambda: cluster.live(job_id), WITHIN, f"{kind} running")[0]
        cluster.state.StopAllocation(state_pb2.StopAllocationRequest(
            namespace=NS, id=first.id), timeout=30)
        second = until(lambda: [a for a in cluster.live(job_id)
                                if a.previous_allocation == first.id], WITHIN,
                       f"the {kind} replacement running")[0]
        assert second.name == first.name
        if kind == "system":
            assert second.node_id == first.node_id
        old = next(a for a in cluster.allocs(job_id) if a.id == first.id)
        assert old.desired_status == STOP and old.next_allocation == second.id
        assert old.desired_description == "alloc is being migrated"
        cluster.stop_job(job_id)

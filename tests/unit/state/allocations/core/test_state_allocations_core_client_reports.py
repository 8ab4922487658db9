"""Nomad's Node.UpdateAlloc rule (:mod:`drover.state.allocations.core.client_reports`):
a down or disconnected node's client reports are refused, so an allocation
lost with its node stays ``lost``."""

from __future__ import annotations

import pytest
from state_core_data import context, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.state.allocations.core import allocs
from drover.state.core import codec
from drover.state.errors import NodeNotReady

LOST = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE


def _plan(status: int, node_known: bool = True) -> object:
    a = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j", node_id="n1",
                                  client_status=LOST,
                                  desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_STOP)
    objects = [(codec.ALLOCATIONS, a, 3, 4)]
    if node_known:
        objects.append((codec.NODES, node_pb2.Node(id="n1", status=status), 1, 2))  # type: ignore[arg-type]
    return allocs.plan_update_allocs(view(objects), context(), [state_pb2.AllocationUpdate(
        id="a1", namespace="default", client_status=COMPLETE)])


@pytest.mark.parametrize("status", [node_pb2.NODE_STATUS_DOWN, node_pb2.NODE_STATUS_DISCONNECTED])
def test_a_down_node_may_not_report_its_lost_allocation_complete(status: int) -> None:
    with pytest.raises(NodeNotReady) as err:
        _plan(status)
    assert err.value.reason == "NODE_NOT_READY"
    assert "node n1 is not allowed to update allocations" in str(err.value)
    assert "allocation a1 is lost" in str(err.value)


def test_a_ready_node_and_an_unknown_one_report() -> None:
    assert _plan(node_pb2.NODE_STATUS_READY).writes  # type: ignore[attr-defined]
    assert _plan(0, node_known=False).writes  # type: ignore[attr-defined]

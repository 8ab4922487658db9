"""The node-schedulability rule's one home: ready, not draining, eligible."""

from __future__ import annotations

from drover.api.types.v1 import node_pb2
from drover.scheduling.eligibility import NOT_ELIGIBLE, NOT_READY, refusal, schedulable

READY = node_pb2.NODE_STATUS_READY


def test_a_ready_eligible_node_is_schedulable() -> None:
    node = node_pb2.Node(status=READY)
    assert refusal(node) is None and schedulable(node)


def test_each_reason_in_nomads_words() -> None:
    cases = [
        (node_pb2.Node(status=node_pb2.NODE_STATUS_DOWN), NOT_READY),
        (node_pb2.Node(status=node_pb2.NODE_STATUS_INITIALIZING), NOT_READY),
        (node_pb2.Node(status=READY, drain=True), NOT_ELIGIBLE),
        (node_pb2.Node(status=READY, scheduling_eligibility=(
            node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE)), NOT_ELIGIBLE),
    ]
    for node, why in cases:
        assert refusal(node) == why and not schedulable(node)

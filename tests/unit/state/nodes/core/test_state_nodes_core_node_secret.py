"""Client updates bound to their node (:mod:`drover.state.nodes.core.node_secret`),
on views of plain data: a secret issued once at registration (kept hashed),
then the node's own heartbeats, re-registration and allocation updates
must present it; another node's secret, or none where one is required, is
refused NODE_SECRET_MISMATCH."""

from __future__ import annotations

import hashlib

import pytest
from state_core_data import context, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.errors import InvalidArgument, NotFound
from drover.state.allocations.core import allocs
from drover.state.core import codec
from drover.state.errors import NodeSecretMismatch
from drover.state.nodes.core import nodes
from drover.state.nodes.core.node_secret import NodeProof


def _h(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def _node(nid: str, secret: str = "") -> node_pb2.Node:
    return node_pb2.Node(id=nid, status=node_pb2.NODE_STATUS_READY,
                         secret_sha256=_h(secret) if secret else b"")


def test_registration_issues_the_secret_once_and_keeps_only_its_hash() -> None:
    plan = nodes.plan_upsert_node(view([]), context(), _node("n1"))
    assert plan.respond(7) == state_pb2.UpsertNodeResponse(index=7, secret_id="id-1")
    stored = codec.decode(codec.NODES, plan.ops[0].value, 1, 1)  # type: ignore[union-attr]
    assert stored.secret_sha256 == _h("id-1") and b"id-1" not in plan.ops[0].value  # type: ignore[union-attr]
    v = view([(codec.NODES, _node("n1", "s1"), 3, 3)])
    claim = _node("n1")
    claim.secret_sha256 = _h("mine")  # a request cannot set the hash
    again = nodes.plan_upsert_node(v, context(), claim, NodeProof(_h("s1")))
    assert again.respond(8).secret_id == ""
    assert codec.decode(codec.NODES, again.ops[0].value, 1, 1).secret_sha256 == _h("s1")  # type: ignore[union-attr]
    for proof in (NodeProof(_h("other")), NodeProof(None, required=True)):
        with pytest.raises(NodeSecretMismatch):
            nodes.plan_upsert_node(v, context(), _node("n1"), proof)
    # ACLs off, nothing presented: the node keeps its secret (no new one)
    assert nodes.plan_upsert_node(v, context(), _node("n1")).respond(9).secret_id == ""
    # registered before secrets: the next registration issues one
    legacy = view([(codec.NODES, _node("n1"), 3, 3)])
    assert nodes.plan_upsert_node(legacy, context(), _node("n1")).respond(9).secret_id == "id-1"


def test_a_heartbeat_is_the_nodes_own_word() -> None:
    v = view([(codec.NODES, _node("n1", "s1"), 3, 3), (codec.NODES, _node("n2", "s2"), 4, 4)])
    beat = state_pb2.UpdateNodeStatusRequest(id="n1", heartbeat=True)
    nodes.plan_node_status(v, context(), beat, NodeProof(_h("s1"), required=True))
    nodes.plan_node_status(v, context(), beat)  # ACLs off, nothing presented
    for proof in (NodeProof(_h("s2")), NodeProof(None, required=True)):
        with pytest.raises(NodeSecretMismatch) as err:
            nodes.plan_node_status(v, context(), beat, proof)
        assert err.value.metadata["node_id"] == "n1"
    # an operator's drain needs no node secret, even with ACLs on
    drain = state_pb2.UpdateNodeStatusRequest(id="n1", drain=True)
    nodes.plan_node_status(v, context(), drain, NodeProof(None, required=True))


def test_allocation_updates_only_from_the_node_that_runs_them() -> None:
    a1 = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j", node_id="n1")
    a2 = allocation_pb2.Allocation(id="a2", namespace="default", job_id="j", node_id="n2")
    ghost = allocation_pb2.Allocation(id="a3", namespace="default", job_id="j", node_id="gone")
    v = view([(codec.NODES, _node("n1", "s1"), 3, 3), (codec.NODES, _node("n2", "s2"), 4, 4),
              (codec.ALLOCATIONS, a1, 5, 5), (codec.ALLOCATIONS, a2, 6, 6),
              (codec.ALLOCATIONS, ghost, 7, 7)])

    def up(*ids: str) -> list[state_pb2.AllocationUpdate]:
        return [state_pb2.AllocationUpdate(
            id=i, client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING) for i in ids]

    as_n1 = NodeProof(_h("s1"), required=True)
    assert allocs.plan_update_allocs(v, context(), up("a1"), as_n1).writes
    with pytest.raises(NodeSecretMismatch, match="'a2'"):  # one call speaks for one node
        allocs.plan_update_allocs(v, context(), up("a1", "a2"), as_n1)
    with pytest.raises(NodeSecretMismatch):
        allocs.plan_update_allocs(v, context(), up("a1"), NodeProof(None, required=True))
    with pytest.raises(NotFound, match="node 'gone'"):
        allocs.plan_update_allocs(v, context(), up("a3"), as_n1)
    assert allocs.plan_update_allocs(v, context(), up("a1", "a2", "a3")).writes  # ACLs off


def test_many_nodes_report_in_one_txn_each_with_its_own_secret() -> None:
    a1 = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j", node_id="n1")
    a2 = allocation_pb2.Allocation(id="a2", namespace="default", job_id="j", node_id="n2")
    v = view([(codec.NODES, _node("n1", "s1"), 3, 3), (codec.NODES, _node("n2", "s2"), 4, 4),
              (codec.ALLOCATIONS, a1, 5, 5), (codec.ALLOCATIONS, a2, 6, 6)])

    def up(*ids: str) -> list[state_pb2.AllocationUpdate]:
        return [state_pb2.AllocationUpdate(
            id=i, client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING) for i in ids]

    s1, s2 = NodeProof(_h("s1"), required=True), NodeProof(_h("s2"), required=True)
    plan = allocs.plan_node_updates(v, context(), [("n1", up("a1"), s1), ("n2", up("a2"), s2)])
    written = {codec.decode(codec.ALLOCATIONS, op.value, 1, 1).id  # type: ignore[union-attr]
               for op in plan.ops if b"/allocations/" in op.key}  # type: ignore[union-attr]
    assert written == {"a1", "a2"}  # one txn for both nodes
    with pytest.raises(NodeSecretMismatch, match="'a2'"):  # n2's group with n1's secret
        allocs.plan_node_updates(v, context(), [("n1", up("a1"), s1), ("n2", up("a2"), s1)])
    with pytest.raises(InvalidArgument, match="runs on node 'n2'"):  # n1 speaks only for n1
        allocs.plan_node_updates(v, context(), [("n1", up("a1", "a2"), s1)])
    with pytest.raises(InvalidArgument, match="runs on node 'n2'"):  # even with ACLs off
        allocs.plan_node_updates(v, context(), [("n1", up("a2"), NodeProof())])

"""The servicer: every StateService RPC is a method of its own, by name (a
missing one would answer UNIMPLEMENTED from the generated base class)."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.state.servicer import StateServicer

SERVICE = state_pb2.DESCRIPTOR.services_by_name["StateService"]


def test_the_servicer_names_every_rpc_of_the_service() -> None:
    names = [m.name for m in SERVICE.methods]
    assert len(names) >= 27  # the proto was read
    assert [n for n in names if n not in vars(StateServicer)] == []

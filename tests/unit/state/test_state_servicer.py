"""The servicer: every StateService RPC is a method of its own, by name (a
missing one would answer UNIMPLEMENTED from the generated base class); each
read is handed to the queries with its row of the table."""

from __future__ import annotations

import inspect

from drover.api.state.v1 import state_pb2
from drover.state.core.query_specs import BY_RPC, QUERIES
from drover.state.servicer import StateServicer

SERVICE = state_pb2.DESCRIPTOR.services_by_name["StateService"]


def test_the_servicer_names_every_rpc_of_the_service() -> None:
    names = [m.name for m in SERVICE.methods]
    assert len(names) >= 27  # the proto was read
    assert [n for n in names if n not in vars(StateServicer)] == []


def test_every_row_names_an_rpc_and_the_servicer_reads_it_with_its_row() -> None:
    names = {m.name for m in SERVICE.methods}
    assert {q.rpc for q in QUERIES} <= names
    for query in QUERIES:
        source = inspect.getsource(vars(StateServicer)[query.rpc])
        assert f'BY_RPC["{query.rpc}"]' in source, query.rpc
        assert BY_RPC[query.rpc] is query

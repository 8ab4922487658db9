"""The servicer: every StateService RPC is a method of its own, by name (a
missing one would answer UNIMPLEMENTED from the generated base class); each
read is handed to the queries group's method generated from its row."""

from __future__ import annotations

import pytest

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.state import queries
from drover.state.core import codec
from drover.state.core.query_specs import QUERIES, Query, Scope, Verb
from drover.state.servicer import StateServicer

SERVICE = state_pb2.DESCRIPTOR.services_by_name["StateService"]


def test_the_servicer_names_every_rpc_of_the_service() -> None:
    names = [m.name for m in SERVICE.methods]
    assert len(names) >= 27  # the proto was read
    assert [n for n in names if n not in vars(StateServicer)] == []


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.rpc)
def test_the_servicer_answers_each_row_with_its_generated_handler(query: Query) -> None:
    method = getattr(queries.QueriesRpc, query.rpc)
    assert method is not getattr(state_pb2_grpc.StateServiceServicer, query.rpc)
    assert method.__qualname__ == f"QueriesRpc.{query.rpc}"
    # The servicer names the RPC and hands it to the queries group.
    owners = [c.__name__ for c in StateServicer.__mro__ if query.rpc in vars(c)]
    assert owners == ["StateServicer", "StateServiceServicer"]


def test_a_row_naming_no_rpc_is_refused_when_installed() -> None:
    row = Query("GetUnicorn", Verb.GET, codec.JOBS, state_pb2.GetJobResponse, "job", Scope.ONE)

    class Scratch:
        pass

    with pytest.raises(AssertionError, match="GetUnicorn"):
        queries.install(Scratch, (row,))
    assert not hasattr(Scratch, "GetUnicorn")

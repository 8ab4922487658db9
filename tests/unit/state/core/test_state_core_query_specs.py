"""The read table (``drover.state.core.query_specs.QUERIES``) against state.proto,
and its hooks on plain in-memory tables (no server, no etcd).

The coverage test is what makes "a new kind is one row" hold: a Get*, List*
or Count* RPC added to StateService without a row fails here, as does a
row whose response field or request fields the proto does not have, or a
hand-written read handler left in a mixin (it would be shadowed silently).
"""

from __future__ import annotations

import re

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, job_pb2, scheduler_pb2
from drover.coord.keys import Keyspace
from drover.errors import InvalidArgument
from drover.state.core import codec
from drover.state.core.query_specs import (
    BY_RPC,
    QUERIES,
    RELATED_SCAN,
    Lookup,
    Query,
    Scope,
    Verb,
    count_scope,
    in_any_namespace,
    job_versions,
    listed_namespace,
    lookup,
    related_evaluations,
)
from drover.state.core.tables import Tables

SERVICE = state_pb2.DESCRIPTOR.services_by_name["StateService"]
READS = sorted(m.name for m in SERVICE.methods if re.match(r"(Get|List|Count)[A-Z]", m.name))
PAGING = ("prefix", "filter", "order_by", "page_size", "page_token", "query")
KEYS = codec.KeyCodec(Keyspace("/q"))


def test_every_get_list_count_rpc_of_the_service_has_exactly_one_row() -> None:
    assert len(READS) >= 13  # the proto was read, not an empty service
    rows = [q.rpc for q in QUERIES]
    assert len(rows) == len(set(rows)), "an RPC has two rows"
    assert sorted(rows) == READS


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.rpc)
def test_a_row_matches_its_rpc_in_the_proto(query: Query) -> None:
    method = SERVICE.methods_by_name[query.rpc]
    assert query.response.DESCRIPTOR is method.output_type
    out = method.output_type.fields_by_name
    assert query.field in out and "meta" in out
    request = method.input_type.fields_by_name
    assert "query" in request, "every read takes QueryOptions (blocking, stale)"
    has_ns = "namespace" in request
    assert has_ns == (query.scope is not Scope.GLOBAL)
    assert set(query.names) | set(query.scoped_by) <= set(request)
    if query.verb is Verb.GET:
        assert (query.scope is Scope.GLOBAL) or "namespace" in query.names
        assert query.what, "a Get names what it did not find"
    else:
        assert not query.names
    if query.verb is Verb.LIST:
        assert set(PAGING) <= set(request) and "next_page_token" in out
        assert out[query.field].is_repeated
    if query.verb is Verb.COUNT:
        assert "filter" in request


def _put(t: Tables, kind: str, msg: object, rev: int, *key: str) -> None:
    raw = codec.encode(msg)  # type: ignore[arg-type]
    if kind == codec.JOB_VERSIONS:
        full = KEYS.version_key(key[0], key[1], int(key[2]))
    else:
        full = KEYS.key(kind, *key)
    t.apply(full, raw, rev, rev, False)


def _ev(eid: str, ns: str = "default", job: str = "web", *, next_eval: str = "",
        previous_eval: str = "", blocked_eval: str = "") -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=eid, namespace=ns, job_id=job, type="service",
                                     next_eval=next_eval, previous_eval=previous_eval,
                                     blocked_eval=blocked_eval)


def test_the_related_chain_is_transitive_within_the_job_and_namespace() -> None:
    t = Tables(KEYS)
    # a -> b -> c (next links), d blocked by c; x: same job, other namespace,
    # linked by id to b: not part of the chain; y: unlinked.
    evs = [_ev("a", next_eval="b"), _ev("b", previous_eval="a", next_eval="c"),
           _ev("c", previous_eval="b", blocked_eval="d"), _ev("d"),
           _ev("x", ns="other", previous_eval="b"), _ev("y")]
    for rev, ev in enumerate(evs, start=10):
        _put(t, codec.EVALUATIONS, ev, rev, ev.namespace, ev.id)
    req = state_pb2.GetEvaluationRequest(id="c", include_related=True)
    got = related_evaluations(t, Lookup(None, "c", req), t[codec.EVALUATIONS].decode("default/c"))
    assert [e.id for e in got["related"]] == ["a", "b", "d"]  # oldest first
    plain = state_pb2.GetEvaluationRequest(id="c")
    assert related_evaluations(t, Lookup(None, "c", plain), evs[2]) == {}
    assert RELATED_SCAN >= 100


def test_an_evaluation_is_found_in_any_namespace_unless_one_is_named() -> None:
    t = Tables(KEYS)
    _put(t, codec.EVALUATIONS, _ev("e1", ns="ops"), 5, "ops", "e1")
    row = BY_RPC["GetEvaluation"]
    req = state_pb2.GetEvaluationRequest(id="e1")
    found = in_any_namespace(t, row, Lookup(None, "e1", req))
    assert found is not None and found.namespace == "ops"
    assert in_any_namespace(t, row, Lookup("ops", "e1", req)) is not None
    assert in_any_namespace(t, row, Lookup("default", "e1", req)) is None
    assert row.missing(row, Lookup("default", "e1", req)) == "evaluation 'e1' not found"


def test_job_versions_newest_first_and_none_without_any() -> None:
    t = Tables(KEYS)
    for v in (0, 2, 1):
        _put(t, codec.JOB_VERSIONS, job_pb2.Job(id="web", namespace="default", version=v),
             10 + v, "default", "web", str(v))
    _put(t, codec.JOB_VERSIONS, job_pb2.Job(id="webx", namespace="default", version=5),
         20, "default", "webx", "5")
    row = BY_RPC["ListJobVersions"]
    req = state_pb2.ListJobVersionsRequest(id="web")
    found = job_versions(t, row, Lookup("default", "web", req))
    assert found is not None and [j.version for j in found] == [2, 1, 0]
    assert job_versions(t, row, Lookup("other", "web", req)) is None


def test_get_job_finds_a_version_and_names_it_when_missing() -> None:
    t = Tables(KEYS)
    _put(t, codec.JOBS, job_pb2.Job(id="web", namespace="default", version=3), 7,
         "default", "web")
    _put(t, codec.JOB_VERSIONS, job_pb2.Job(id="web", namespace="default", version=1), 5,
         "default", "web", "1")
    row = BY_RPC["GetJob"]
    latest = Lookup("default", "web", state_pb2.GetJobRequest(id="web"))
    found = row.find(t, row, latest)
    assert found is not None and found.version == 3
    v1 = Lookup("default", "web", state_pb2.GetJobRequest(id="web", version=1))
    found = row.find(t, row, v1)
    assert found is not None and found.version == 1
    v9 = Lookup("default", "web", state_pb2.GetJobRequest(id="web", version=9))
    assert row.find(t, row, v9) is None
    assert row.missing(row, v9) == "job 'web' not found in namespace 'default' at version 9"
    assert row.missing(row, latest) == "job 'web' not found in namespace 'default'"


def test_the_scheduler_config_has_defaults_until_written() -> None:
    t = Tables(KEYS)
    row = BY_RPC["GetSchedulerConfig"]
    lookup = Lookup(codec.GLOBAL_NS, "", state_pb2.GetSchedulerConfigRequest())
    assert row.find(t, row, lookup) == scheduler_pb2.SchedulerConfig()
    cfg = scheduler_pb2.SchedulerConfig(pause_eval_broker=True)
    _put(t, codec.SCHEDULER_CONFIG, cfg, 9, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID)
    found = row.find(t, row, lookup)
    assert found is not None and found.pause_eval_broker


def test_a_node_is_missing_without_a_namespace_in_the_message() -> None:
    row = BY_RPC["GetNode"]
    lookup = Lookup(codec.GLOBAL_NS, "n1", state_pb2.GetNodeRequest(id="n1"))
    assert row.find(Tables(KEYS), row, lookup) is None
    assert row.missing(row, lookup) == "node 'n1' not found"


def _field(call: object) -> str:
    with pytest.raises(InvalidArgument) as info:
        call()  # type: ignore[operator]
    return str(info.value.metadata["field"])


def test_how_each_scope_reads_a_namespace() -> None:
    job, ev, node = BY_RPC["GetJob"], BY_RPC["GetEvaluation"], BY_RPC["GetNode"]
    assert lookup(job, state_pb2.GetJobRequest(id="w")).namespace == "default"
    assert lookup(job, state_pb2.GetJobRequest(namespace="ops", id="w")).namespace == "ops"
    assert _field(lambda: lookup(job, state_pb2.GetJobRequest(namespace="*", id="w"))) \
        == "namespace"
    for every in ("", "*"):
        got = lookup(ev, state_pb2.GetEvaluationRequest(namespace=every, id="e"))
        assert got.namespace is None and got.id == "e"
    assert lookup(node, state_pb2.GetNodeRequest(id="n")).namespace == codec.GLOBAL_NS
    listed = BY_RPC["ListJobs"]
    assert listed_namespace(listed, state_pb2.ListJobsRequest()) == "default"
    assert listed_namespace(listed, state_pb2.ListJobsRequest(namespace="*")) is None
    assert listed_namespace(BY_RPC["ListNodes"], state_pb2.ListNodesRequest()) is None


def test_names_are_checked_in_the_rows_order() -> None:
    # Both bad: the row's first name is the one reported.
    assert _field(lambda: lookup(BY_RPC["GetJob"], state_pb2.GetJobRequest(
        namespace="a b", id=""))) == "namespace"
    assert _field(lambda: lookup(BY_RPC["GetEvaluation"], state_pb2.GetEvaluationRequest(
        namespace="a b", id=""))) == "id"


def test_a_count_is_scoped_only_by_the_fields_that_are_set() -> None:
    row = BY_RPC["CountEvaluations"]
    assert count_scope(row, state_pb2.CountEvaluationsRequest()) is None
    assert count_scope(row, state_pb2.CountEvaluationsRequest(job_id="web")) == {"job_id": "web"}
    assert _field(lambda: count_scope(row, state_pb2.CountEvaluationsRequest(job_id="a/b"))) \
        == "job_id"

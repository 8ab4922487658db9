"""Every read RPC, driven by the read table itself (``query_specs.QUERIES``):
found, not found (exact reason and message), paging, counting, blocking, and
bad input refused with ErrorInfo before the read blocks.

A row added to the table is picked up by the bad-input and blocking cases
at once; the seeders below say how to make an object of each kind.

The cases, not a test module: ``tests/integration/state/test_state_queries.py``
runs them on a state service over etcd, ``tests/unit/state/test_state_queries_memkv.py``
on one over :class:`MemoryKV` (the same bodies; the ``replica`` fixture differs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from state_harness import StateReplica

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
    query_pb2,
    scheduler_pb2,
)
from drover.rpc.errors import MESSAGE_BYTES
from drover.rpc.remote import error_info
from drover.state.core import codec
from drover.state.core.query_specs import QUERIES, Query, Scope, Verb

CALL_TIMEOUT = 20.0


def _job(job_id: str, ns: str = "default", *, update: bool = False,
         count: int = 1) -> job_pb2.Job:  # fmt: skip
    tg = job_pb2.TaskGroup(name="g", count=count)
    if update:
        tg.update.CopyFrom(job_pb2.UpdateStrategy(max_parallel=1))
    return job_pb2.Job(id=job_id, namespace=ns, datacenters=["dc1"], task_groups=[tg])


async def _register(stub: Any, job: job_pb2.Job) -> state_pb2.RegisterJobResponse:
    return await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))


# -- one object of each kind: (namespace, id) ---------------------------------

async def seed_job(stub: Any, i: int) -> tuple[str, str]:
    await _register(stub, _job(f"j{i}"))
    return "default", f"j{i}"


async def seed_version(stub: Any, i: int) -> tuple[str, str]:
    # Each call is a new version of one job (its spec changes).
    await _register(stub, _job("web", count=i + 1))
    return "default", "web"


async def seed_deployment(stub: Any, i: int) -> tuple[str, str]:
    resp = await _register(stub, _job(f"d{i}", update=True))
    return "default", resp.deployment_id


async def seed_allocation(stub: Any, i: int) -> tuple[str, str]:
    if i == 0:
        await _register(stub, _job("web"))
    alloc = allocation_pb2.Allocation(id=f"a{i}", namespace="default", job_id="web")
    await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[alloc]))
    return "default", f"a{i}"


async def seed_node(stub: Any, i: int) -> tuple[str, str]:
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(id=f"n{i}")))
    return codec.GLOBAL_NS, f"n{i}"


async def seed_evaluation(stub: Any, i: int, ns: str = "default",
                          job: str = "web") -> tuple[str, str]:  # fmt: skip
    ev = evaluation_pb2.Evaluation(id=f"e{i}", namespace=ns, job_id=job, type="service")
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[ev]))
    return ns, f"e{i}"


async def seed_config(stub: Any, i: int) -> tuple[str, str]:
    cfg = scheduler_pb2.SchedulerConfig(pause_eval_broker=bool(i % 2))
    await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(config=cfg))
    return codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID


Seeder = Callable[[Any, int], Awaitable[tuple[str, str]]]
SEEDERS: dict[str, Seeder] = {
    codec.JOBS: seed_job, codec.JOB_VERSIONS: seed_version,
    codec.DEPLOYMENTS: seed_deployment, codec.ALLOCATIONS: seed_allocation,
    codec.NODES: seed_node, codec.EVALUATIONS: seed_evaluation,
    codec.SCHEDULER_CONFIG: seed_config,
}


def _request(query: Query, /, **fields: Any) -> Any:
    return getattr(state_pb2, f"{query.rpc}Request")(**fields)


def _names(query: Query, ns: str, oid: str) -> dict[str, Any]:
    """The request fields that name the object ``ns/oid`` for ``query``."""
    out: dict[str, Any] = {}
    if "namespace" in query.names:
        out["namespace"] = ns
    if "id" in query.names:
        out["id"] = oid
    return out


async def _call(stub: Any, query: Query, request: Any) -> Any:
    return await getattr(stub, query.rpc)(request, timeout=CALL_TIMEOUT)


async def _refused(call: Awaitable[Any], code: grpc.StatusCode) -> tuple[str, Any]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    assert info.value.code() == code, info.value.details()
    detail = error_info(info.value)
    assert detail is not None, "no ErrorInfo"
    return info.value.details() or "", detail


GETS = [q for q in QUERIES if q.verb is Verb.GET]
LISTS = [q for q in QUERIES if q.verb is Verb.LIST]
NAMED = [q for q in QUERIES if "namespace" in _request(q).DESCRIPTOR.fields_by_name]
BY_ID = [q for q in QUERIES if "id" in q.names]
ids = lambda q: q.rpc  # noqa: E731


# -- get ----------------------------------------------------------------------

@pytest.mark.parametrize("query", GETS, ids=ids)
async def test_get_finds_what_was_written(replica: StateReplica, query: Query) -> None:
    ns, oid = await SEEDERS[query.kind](replica.stub, 0)
    for stale in (False, True):
        req = _request(query, **_names(query, ns, oid),
                       query=query_pb2.QueryOptions(stale=stale))
        resp = await _call(replica.stub, query, req)
        got = getattr(resp, query.field)
        if resp.DESCRIPTOR.fields_by_name[query.field].is_repeated:  # ListJobVersions
            got = got[0]
        if query.rpc == "GetJobSnapshot":
            got = got.job
        if "id" in query.names:
            assert got.id == oid
        assert resp.meta.index > 0 and resp.meta.known_leader


NOT_FOUND = [
    ("GetJob", {"id": "nope"}, "job 'nope' not found in namespace 'default'"),
    ("GetJob", {"namespace": "ops", "id": "nope"}, "job 'nope' not found in namespace 'ops'"),
    ("GetJob", {"id": "j0", "version": 7}, "job 'j0' not found in namespace 'default' "
     "at version 7"),
    ("ListJobVersions", {"id": "nope"}, "job 'nope' not found in namespace 'default'"),
    ("GetEvaluation", {"id": "nope"}, "evaluation 'nope' not found"),
    ("GetEvaluation", {"id": "e0", "namespace": "ops"}, "evaluation 'e0' not found"),
    ("GetDeployment", {"id": "nope"}, "deployment 'nope' not found in namespace 'default'"),
    ("GetAllocation", {"namespace": "ops", "id": "a0"},
     "allocation 'a0' not found in namespace 'ops'"),
    ("GetNode", {"id": "nope"}, "node 'nope' not found"),
]


async def test_not_found_cases_cover_every_get_that_can_miss() -> None:
    # The scheduler config has defaults; a job snapshot answers "no job" too.
    can_miss = {q.rpc for q in GETS if q.rpc not in ("GetSchedulerConfig", "GetJobSnapshot")}
    assert {rpc for rpc, _, _ in NOT_FOUND} == can_miss


async def test_a_job_snapshot_of_no_job_answers_without_one(replica: StateReplica) -> None:
    resp = await replica.stub.GetJobSnapshot(state_pb2.GetJobSnapshotRequest(id="nope"),
                                             timeout=CALL_TIMEOUT)
    assert not resp.snapshot.HasField("job") and resp.snapshot.allocations_complete
    assert resp.meta.index > 0


@pytest.mark.parametrize("rpc,fields,message", NOT_FOUND,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(NOT_FOUND)])
async def test_get_of_a_missing_object_is_not_found(
    replica: StateReplica, rpc: str, fields: dict[str, Any], message: str,
) -> None:
    stub = replica.stub
    for seed in (seed_job, seed_evaluation, seed_allocation):  # others exist, not these
        await seed(stub, 0)
    query = next(q for q in QUERIES if q.rpc == rpc)
    details, info = await _refused(_call(stub, query, _request(query, **fields)),
                                   grpc.StatusCode.NOT_FOUND)
    assert details == message
    assert info.reason == "NOT_FOUND" and info.domain == "drover"


async def test_scheduler_config_has_defaults_then_what_was_set(replica: StateReplica) -> None:
    stub = replica.stub
    first = await stub.GetSchedulerConfig(state_pb2.GetSchedulerConfigRequest())
    assert first.config == scheduler_pb2.SchedulerConfig()
    await seed_config(stub, 1)
    got = await stub.GetSchedulerConfig(state_pb2.GetSchedulerConfigRequest())
    assert got.config.pause_eval_broker and got.meta.index > first.meta.index


async def test_job_versions_newest_first_and_a_version_by_number(replica: StateReplica) -> None:
    stub = replica.stub
    for i in range(3):
        await seed_version(stub, i)
    resp = await stub.ListJobVersions(state_pb2.ListJobVersionsRequest(id="web"))
    assert [j.version for j in resp.versions] == [2, 1, 0]
    assert [j.task_groups[0].count for j in resp.versions] == [3, 2, 1]
    v1 = await stub.GetJob(state_pb2.GetJobRequest(id="web", version=1))
    assert v1.job.version == 1 and v1.job.task_groups[0].count == 2


async def test_get_evaluation_searches_every_namespace_and_walks_the_chain(
    replica: StateReplica,
) -> None:
    stub = replica.stub
    evs = [evaluation_pb2.Evaluation(id="c1", namespace="ops", job_id="web", type="service",
                                     next_eval="c2"),
           evaluation_pb2.Evaluation(id="c2", namespace="ops", job_id="web", type="service",
                                     previous_eval="c1")]
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=evs))
    for ns in ("", "*", "ops"):
        got = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(namespace=ns, id="c2"))
        assert got.evaluation.namespace == "ops" and not got.related
    chain = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="c2",
                                                                    include_related=True))
    assert [e.id for e in chain.related] == ["c1"]


# -- list and count -----------------------------------------------------------

@pytest.mark.parametrize("query", LISTS, ids=ids)
async def test_list_pages_through_what_was_written(replica: StateReplica, query: Query) -> None:
    stub = replica.stub
    seeded = {oid for _, oid in [await SEEDERS[query.kind](stub, i) for i in range(3)]}
    seen: list[str] = []
    token, pages = "", 0
    while True:
        resp = await _call(stub, query, _request(query, page_size=2, page_token=token))
        seen.extend(o.id for o in getattr(resp, query.field))
        token, pages = resp.next_page_token, pages + 1
        assert resp.meta.index > 0
        if not token:
            break
        assert pages < 10
        # A token belongs to its RPC and its request.
        other = next(q for q in LISTS if q.rpc != query.rpc)
        _, info = await _refused(_call(stub, other, _request(other, page_size=2,
                                                              page_token=token)),
                                 grpc.StatusCode.INVALID_ARGUMENT)
        assert info.reason == "INVALID_PAGE_TOKEN"
        _, info = await _refused(_call(stub, query, _request(query, page_size=3,
                                                              page_token=token)),
                                 grpc.StatusCode.INVALID_ARGUMENT)
        assert info.reason == "INVALID_PAGE_TOKEN"
    assert pages == 2 and len(seen) == len(set(seen))
    assert seeded <= set(seen)


async def test_count_by_namespace_filter_and_job(replica: StateReplica) -> None:
    stub = replica.stub
    for i, (ns, job) in enumerate([("default", "a"), ("default", "a"), ("default", "b"),
                                   ("ops", "a")]):
        await seed_evaluation(stub, i, ns, job)

    async def count(**fields: Any) -> int:
        resp = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(**fields))
        assert resp.meta.index > 0
        return int(resp.count)

    assert await count() == 3
    assert await count(namespace="*") == 4
    assert await count(namespace="ops") == 1
    assert await count(namespace="*", job_id="a") == 3
    assert await count(filter='job_id == "b"') == 1
    assert await count(namespace="*", job_id="a", filter='namespace == "ops"') == 1
    listed = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="*", filter='job_id == "a"'))
    assert len(listed.evaluations) == 3


# -- blocking -----------------------------------------------------------------

@pytest.mark.parametrize("query", QUERIES, ids=ids)
async def test_every_read_blocks_until_its_kind_changes(replica: StateReplica,
                                                       query: Query) -> None:
    stub = replica.stub
    seed = SEEDERS[query.kind]
    ns, oid = await seed(stub, 0)
    names = _names(query, ns, oid)
    before = await _call(stub, query, _request(query, **names))
    wait = Duration(seconds=15)
    blocked = asyncio.ensure_future(_call(stub, query, _request(
        query, **names, query=query_pb2.QueryOptions(min_index=before.meta.index,
                                                     max_wait=wait))))
    try:
        await asyncio.sleep(0.2)
        assert not blocked.done(), "answered before its kind changed"
        await seed(stub, 1)
        after = await asyncio.wait_for(blocked, CALL_TIMEOUT)
    finally:
        blocked.cancel()
    assert after.meta.index > before.meta.index


# -- bad input ----------------------------------------------------------------

#: Blocking on an index far ahead for longer than a call may take: an answer
#: other than INVALID_ARGUMENT (DEADLINE_EXCEEDED) means the read waited
#: before it looked at its input.
FAR = query_pb2.QueryOptions(min_index=2**62, max_wait=Duration(seconds=600))


@pytest.mark.parametrize("query", NAMED, ids=ids)
async def test_a_bad_namespace_is_refused(replica: StateReplica, query: Query) -> None:
    id_field = {"id": "x"} if "id" in _request(query).DESCRIPTOR.fields_by_name else {}
    stub = replica.stub
    # Malformed (the interceptor's field checks refuse these for every RPC).
    for bad in ("bad ns!", "x" * 10_000):
        req = _request(query, namespace=bad, query=FAR, **id_field)
        details, info = await _refused(_call(stub, query, req), grpc.StatusCode.INVALID_ARGUMENT)
        assert info.metadata["field"] == "namespace"
        assert len(details.encode()) <= MESSAGE_BYTES
    if query.scope is Scope.ONE:  # one namespace: "every namespace" is no answer
        req = _request(query, namespace="*", query=FAR, **id_field)
        details, info = await _refused(_call(stub, query, req), grpc.StatusCode.INVALID_ARGUMENT)
        assert info.metadata["field"] == "namespace" and "'*' is invalid" in details


@pytest.mark.parametrize("query", BY_ID, ids=ids)
async def test_a_bad_or_missing_id_is_refused(replica: StateReplica, query: Query) -> None:
    for bad in ("", "a/b", "é", "x" * 129):
        req = _request(query, id=bad, query=FAR)
        details, info = await _refused(_call(replica.stub, query, req),
                                       grpc.StatusCode.INVALID_ARGUMENT)
        assert info.reason == "INVALID_ARGUMENT" and info.metadata["field"] == "id"
        assert len(details.encode()) <= MESSAGE_BYTES
        if not bad:
            assert details == "id is required"


@pytest.mark.parametrize("query", [q for q in QUERIES if q.verb is not Verb.GET], ids=ids)
async def test_a_bad_filter_is_refused(replica: StateReplica, query: Query) -> None:
    await SEEDERS[query.kind](replica.stub, 0)
    for bad in ("job_id ==", "1/0 == 1", "no_such_field == 1"):
        _, info = await _refused(_call(replica.stub, query, _request(query, filter=bad)),
                                 grpc.StatusCode.INVALID_ARGUMENT)
        assert info.reason == "INVALID_FILTER" and info.metadata["field"] == "filter"


async def test_a_bad_count_scope_is_refused(replica: StateReplica) -> None:
    for bad in ("a b", "x" * 200):
        _, info = await _refused(replica.stub.CountEvaluations(
            state_pb2.CountEvaluationsRequest(job_id=bad, query=FAR), timeout=CALL_TIMEOUT),
            grpc.StatusCode.INVALID_ARGUMENT)
        assert info.metadata["field"] == "job_id"

"""Every List RPC pages the same way: all pages, both orders, with and without
a filter, while other writes happen; and tokens are bound to their request.

The cases, not a test module: ``tests/integration/state/test_state_lists.py``
runs them on a state service over etcd, ``tests/unit/state/test_state_lists_memkv.py``
on one over :class:`MemoryKV` (the same bodies; the ``replica`` fixture differs)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.coord.kv import Put
from drover.rpc.remote import error_info

NAMESPACES = ("default", "other")
SEEDED = 20
MATCHING = 12  # objects 0..11 match the filter (their field sorts below "x12")
MAX_PAGE = 1000


def _ns(i: int) -> str:
    return NAMESPACES[i % 2]


async def _job(stub: Any, i: int) -> None:
    job = job_pb2.Job(id=f"j{i:02d}", name=f"x{i:02d}", namespace=_ns(i), datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))


async def _deployment(stub: Any, i: int) -> None:
    tg = job_pb2.TaskGroup(name="g", count=1, update=job_pb2.UpdateStrategy(max_parallel=1))
    job = job_pb2.Job(id=f"x{i:02d}", namespace=_ns(i), datacenters=["dc1"], task_groups=[tg])
    await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))


async def _alloc(stub: Any, i: int) -> None:
    try:  # allocations of unknown jobs are refused: the job first
        await stub.GetJob(state_pb2.GetJobRequest(namespace=_ns(i), id=f"x{i:02d}"))
    except grpc.aio.AioRpcError:
        job = job_pb2.Job(id=f"x{i:02d}", namespace=_ns(i), datacenters=["dc1"],
                          task_groups=[job_pb2.TaskGroup(name="g", count=1)])
        await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))
    a = allocation_pb2.Allocation(id=f"a{i:02d}", namespace=_ns(i), job_id=f"x{i:02d}")
    await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[a]))


async def _node(stub: Any, i: int) -> None:
    await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(id=f"n{i:02d}",
                                                                         name=f"x{i:02d}")))


#: The leader fence the test holds: updating an evaluation in place is a
#: broker outcome, which the state service takes only from a leader.
_EVAL_FENCE: list[tuple[str, str]] = []


async def _eval(stub: Any, i: int) -> None:
    ev = evaluation_pb2.Evaluation(id=f"e{i:02d}", namespace=_ns(i), job_id=f"x{i:02d}",
                                   type="service")
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[ev]),
                                 metadata=tuple(_EVAL_FENCE))


@pytest.fixture(autouse=True)
async def _leader_fence(replica: Any) -> AsyncIterator[None]:
    key = f"{replica.service.cache.keys.base}election/broker/lists-test"
    res = await replica.store.txn([], [Put(key.encode(), b"test leader")])
    _EVAL_FENCE[:] = [("drover-fence", f"{key}@{res.revision}")]
    yield
    _EVAL_FENCE.clear()


@dataclass(frozen=True)
class ListRpc:
    method: str
    request: Any
    items: str
    field: str  # the filtered field: "x00".."x19" for the seeded objects
    write: Callable[[Any, int], Awaitable[None]]
    namespaced: bool = True
    # Whether write(i) for an existing i updates in place (RegisterJob with an
    # update strategy makes a new deployment instead).
    updates: bool = True

    def ident(self, obj: Any) -> tuple[str, str]:
        ns = getattr(obj, "namespace", "-")
        return f"{ns}/{obj.id}", f"{ns}/{getattr(obj, self.field)}"


RPCS = [
    ListRpc("ListJobs", state_pb2.ListJobsRequest, "jobs", "name", _job),
    ListRpc("ListDeployments", state_pb2.ListDeploymentsRequest, "deployments", "job_id",
            _deployment, updates=False),
    ListRpc("ListAllocations", state_pb2.ListAllocationsRequest, "allocations", "job_id", _alloc),
    ListRpc("ListNodes", state_pb2.ListNodesRequest, "nodes", "name", _node, namespaced=False),
    ListRpc("ListEvaluations", state_pb2.ListEvaluationsRequest, "evaluations", "job_id", _eval),
]


async def _walk(stub: Any, rpc: ListRpc, writes: itertools.count, **fields: Any) -> list[str]:
    """The (id, namespace/field) of every object returned, walking all pages."""
    call = getattr(stub, rpc.method)
    seen: list[tuple[str, str]] = []
    token = ""
    for pages in range(200):
        r = await call(rpc.request(page_token=token, **fields))
        seen.extend(rpc.ident(o) for o in getattr(r, rpc.items))
        token = r.next_page_token
        if not token:
            ids = [i for i, _ in seen]
            assert len(ids) == len(set(ids)), ("returned twice", fields)
            return [f for _, f in seen]
        # Other writes between pages: a few new objects (which an ascending
        # walk may meet at its end), and updates of seeded ones.
        if pages < 3:
            await rpc.write(stub, 50 + next(writes) % 50)
        if rpc.updates:
            await rpc.write(stub, next(writes) % SEEDED)
    raise AssertionError(f"walk did not end: {fields}")


def _expected(rpc: ListRpc, filtered: bool, namespace: str = "*") -> set[str]:
    out = set()
    for i in range(SEEDED):
        ns = _ns(i) if rpc.namespaced else "-"
        if (filtered and i >= MATCHING) or namespace not in ("*", ns):
            continue
        out.add(f"{ns}/x{i:02d}")
    return out


@pytest.mark.parametrize("rpc", RPCS, ids=[r.method for r in RPCS])
async def test_every_list_walks_every_object_exactly_once(replica, rpc: ListRpc) -> None:
    stub = replica.stub
    for i in range(SEEDED):
        await rpc.write(stub, i)
    writes = itertools.count()
    scope = {"namespace": "*"} if rpc.namespaced else {}
    flt = f'{rpc.field} < "x12"'
    for size, desc, filtered in itertools.product((1, 7, MAX_PAGE), (False, True),
                                                  (False, True)):
        order = "create_index desc" if desc else "create_index"
        seen = await _walk(stub, rpc, writes, page_size=size, order_by=order,
                           filter=flt if filtered else "", **scope)
        want = _expected(rpc, filtered)
        if rpc.updates:
            assert len(seen) == len(set(seen)), (size, desc, filtered, "returned twice")
        assert want <= set(seen), (size, desc, filtered, sorted(want - set(seen)))
        if filtered:
            assert set(seen) == want
    if rpc.namespaced:
        other = await _walk(stub, rpc, writes, page_size=3, namespace="other", filter=flt)
        assert set(other) == _expected(rpc, True, "other")
        default = await _walk(stub, rpc, writes, page_size=MAX_PAGE)  # empty: "default"
        assert {s.split("/")[0] for s in default} == {"default"}


@pytest.mark.parametrize("rpc", RPCS, ids=[r.method for r in RPCS])
async def test_tokens_are_bound_to_their_request(replica, rpc: ListRpc) -> None:
    stub = replica.stub
    for i in range(SEEDED):
        await rpc.write(stub, i)
    call = getattr(stub, rpc.method)
    flt = f'{rpc.field} < "x12"'
    base = {"page_size": 3, "filter": flt, **({"namespace": "*"} if rpc.namespaced else {})}
    token = (await call(rpc.request(**base))).next_page_token
    assert token
    second = await call(rpc.request(page_token=token, **base))
    assert getattr(second, rpc.items)
    changes: list[tuple[str, dict[str, object]]] = [
        ("filter", {"filter": f'{rpc.field} < "x13"'}),
        ("order_by", {"order_by": "create_index desc"}),
        ("page_size", {"page_size": 4})]
    if rpc.namespaced:
        changes.append(("namespace", {"namespace": "other"}))
    for mismatch, change in changes:
        with pytest.raises(grpc.RpcError) as err:
            await call(rpc.request(page_token=token, **{**base, **change}))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        info = error_info(err.value)
        assert info is not None and info.reason == "INVALID_PAGE_TOKEN"
        assert info.metadata["mismatch"] == mismatch


@pytest.mark.parametrize("rpc", RPCS, ids=[r.method for r in RPCS])
async def test_bad_filters_and_orders_name_the_field(replica, rpc: ListRpc) -> None:
    call = getattr(replica.stub, rpc.method)
    for expr, path in [('colour == "red"', "colour"), (f"{rpc.field} > 3", rpc.field),
                       ("create_index == \"x\"", "create_index")]:
        with pytest.raises(grpc.RpcError) as err:
            await call(rpc.request(filter=expr))
        info = error_info(err.value)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info is not None and info.reason == "INVALID_FILTER", expr
        assert info.metadata["path"] == path and info.metadata["field"] == "filter"
    bad_args: list[dict[str, object]] = [{"order_by": "modify_index"}, {"page_size": -1}]
    for bad in bad_args:
        with pytest.raises(grpc.RpcError) as err:
            await call(rpc.request(**bad))
        info = error_info(err.value)
        assert info is not None and info.metadata["field"] == next(iter(bad))

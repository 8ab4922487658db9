"""The watcher's reads over gRPC (:class:`GrpcStateApi`), on a fake stub:
a new watcher's versions and allocations come from one GetJobSnapshot, and
a job too large for one answer has its deployment's allocations listed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.deployments.state_api import GrpcStateApi


class _Stub:
    def __init__(self, snapshot: state_pb2.JobSnapshot,
                 listed: list[allocation_pb2.Allocation]) -> None:
        self.snapshot, self.listed = snapshot, listed
        self.calls: list[tuple[str, Any]] = []

    async def GetJobSnapshot(self, request: Any, **_: Any) -> Any:
        self.calls.append(("GetJobSnapshot", request))
        return state_pb2.GetJobSnapshotResponse(snapshot=self.snapshot)

    async def ListAllocations(self, request: Any, **_: Any) -> Any:
        self.calls.append(("ListAllocations", request))
        return state_pb2.ListAllocationsResponse(allocations=self.listed)


class _Replicas:
    def __init__(self, stub: _Stub) -> None:
        self.stub = stub

    async def read(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        return await call(self.stub)


def _alloc(aid: str, deployment_id: str) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=aid, job_id="web", deployment_id=deployment_id)


def _reads(stub: _Stub) -> tuple[list[job_pb2.Job], list[allocation_pb2.Allocation]]:
    api = GrpcStateApi(_Replicas(stub))  # type: ignore[arg-type]
    return asyncio.run(api.deployment_reads("default", "web", "d2"))


def test_one_snapshot_gives_the_versions_and_the_deployments_allocations() -> None:
    snap = state_pb2.JobSnapshot(
        versions=[job_pb2.Job(id="web", version=1), job_pb2.Job(id="web", version=0)],
        allocations=[_alloc("a", "d1"), _alloc("b", "d2"), _alloc("c", "d2")],
        allocations_complete=True)
    stub = _Stub(snap, [])
    versions, allocs = _reads(stub)
    assert [v.version for v in versions] == [1, 0]
    assert [a.id for a in allocs] == ["b", "c"]  # the other deployment's left out
    assert [name for name, _ in stub.calls] == ["GetJobSnapshot"]


def test_a_job_too_large_for_one_answer_has_its_deployments_allocations_listed() -> None:
    snap = state_pb2.JobSnapshot(versions=[job_pb2.Job(id="web", version=1)],
                                 allocations_complete=False)
    stub = _Stub(snap, [_alloc("b", "d2")])
    versions, allocs = _reads(stub)
    assert [a.id for a in allocs] == ["b"] and len(versions) == 1
    listed = stub.calls[1][1]
    assert stub.calls[1][0] == "ListAllocations"
    assert listed.filter == 'deployment_id == "d2"'

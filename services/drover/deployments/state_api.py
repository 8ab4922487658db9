"""The watcher's seam to the state service: exactly the calls it makes.

:class:`StateApi` is the Protocol the leader shell depends on;
:class:`GrpcStateApi` implements it on a state-service channel. Reads are
consistent (never ``stale``): the first ones after winning the election are
the barrier that puts the new leader's view past everything the old leader
wrote. Writes carry the leader's fence as ``drover-fence`` metadata, so a
deposed leader's write fails inside etcd with FENCE_LOST.

gRPC errors come back as the :mod:`drover.errors` class of their ErrorInfo
reason where the watcher acts on it (fence lost, conflict, not found), and
as :class:`~drover.errors.Unavailable` otherwise. Every call is counted
(:class:`StateCallStats`) so GetWatcherStats and the benchmark can show
that queries do not grow with the number of deployments.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, deployment_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.coord.fence import Fence
from drover.errors import Conflict, DroverError, FenceLost, NotFound, Unavailable
from drover.remote_errors import narrow
from drover.rpc.remote import from_rpc_error
from drover.rpc.replicas import ReplicaPool
from drover.rpc.resume import subscribe_resumed

ACTIVE_FILTER = 'status == "running" || status == "paused"'
PAGE_SIZE = 500


@dataclass(frozen=True)
class StateCallStats:
    queries: int
    writes: int
    subscriptions: int


class StateApi(Protocol):
    async def list_active_deployments(self) -> tuple[list[deployment_pb2.Deployment], int]: ...

    async def get_deployment(
        self, namespace: str, deployment_id: str
    ) -> deployment_pb2.Deployment | None: ...

    async def deployment_reads(
        self, namespace: str, job_id: str, deployment_id: str
    ) -> tuple[list[job_pb2.Job], list[allocation_pb2.Allocation]]: ...

    def subscribe(self, topic: int, from_index: int) -> AsyncIterator[Any]: ...

    async def update_deployment(
        self, request: state_pb2.UpdateDeploymentRequest, fence: Fence
    ) -> state_pb2.UpdateDeploymentResponse: ...

    async def upsert_evaluations(
        self, evaluations: Sequence[evaluation_pb2.Evaluation], fence: Fence
    ) -> int: ...

    async def update_alloc_desired_transition(
        self, request: state_pb2.UpdateAllocDesiredTransitionRequest, fence: Fence
    ) -> int: ...

    def call_stats(self) -> StateCallStats: ...


def translate(err: grpc.RpcError) -> DroverError:
    """The drover error a state-service failure stands for, narrowed to
    what the watcher acts on (decoded by :func:`drover.rpc.remote.from_rpc_error`)."""
    return narrow(from_rpc_error(err), (FenceLost, Conflict, NotFound), "state service")


class GrpcStateApi:
    """:class:`StateApi` over every state replica (:class:`ReplicaPool`).

    Queries move on to another replica when one is down or does not answer
    in time (safe to repeat); a write is one attempt on the next replica
    (its outcome may be unknown: the caller decides), and a replica it
    failed on is held down so the next call goes elsewhere. A Subscribe is
    resumed on another replica from the last index delivered when its
    replica fails or stays silent past the hold
    (:func:`drover.rpc.resume.subscribe_resumed`).
    """

    def __init__(self, replicas: ReplicaPool, *, timeout: float = 10.0) -> None:
        self.replicas = replicas
        self._timeout = timeout
        self._counts: collections.Counter[str] = collections.Counter()

    def call_stats(self) -> StateCallStats:
        return StateCallStats(self._counts["query"], self._counts["write"],
                              self._counts["subscribe"])

    async def _call(self, kind: str, method: str, request: Any,
                    fence: Fence | None = None) -> Any:
        self._counts[kind] += 1
        run = self.replicas.read if kind == "query" else self.replicas.once
        metadata = fence.metadata() if fence else None
        try:
            return await run(lambda stub: getattr(stub, method)(
                request, timeout=self._timeout, metadata=metadata))
        except grpc.RpcError as err:
            raise translate(err) from err

    async def list_active_deployments(self) -> tuple[list[deployment_pb2.Deployment], int]:
        """Every running or paused deployment, and the lowest index of the pages."""
        out: list[deployment_pb2.Deployment] = []
        token, index = "", 0
        while True:
            resp = await self._call("query", "ListDeployments",
                                    state_pb2.ListDeploymentsRequest(
                                        namespace="*", filter=ACTIVE_FILTER,
                                        page_size=PAGE_SIZE, page_token=token))
            out.extend(resp.deployments)
            # Later pages may reflect later state; streaming from the first
            # page's index can only repeat events, never miss one.
            index = resp.meta.index if not index else min(index, resp.meta.index)
            token = resp.next_page_token
            if not token:
                return out, index

    async def get_deployment(
        self, namespace: str, deployment_id: str
    ) -> deployment_pb2.Deployment | None:
        try:
            resp = await self._call("query", "GetDeployment",
                                    state_pb2.GetDeploymentRequest(
                                        namespace=namespace or "default", id=deployment_id))
        except NotFound:
            return None
        return resp.deployment  # type: ignore[no-any-return]

    async def deployment_reads(
        self, namespace: str, job_id: str, deployment_id: str
    ) -> tuple[list[job_pb2.Job], list[allocation_pb2.Allocation]]:
        """What a new watcher needs: the job's versions and the deployment's
        allocations, at one revision (one GetJobSnapshot). A job with more
        allocations than one answer carries has its deployment's listed."""
        snap = (await self._call("query", "GetJobSnapshot", state_pb2.GetJobSnapshotRequest(
            namespace=namespace or "default", id=job_id))).snapshot
        if not snap.allocations_complete:
            return list(snap.versions), await self.allocations_where(
                f'deployment_id == "{deployment_id}"')
        return list(snap.versions), [a for a in snap.allocations
                                     if a.deployment_id == deployment_id]

    async def subscribe(self, topic: int, from_index: int) -> AsyncIterator[Any]:
        self._counts["subscribe"] += 1
        req = state_pb2.SubscribeRequest(
            topics=[topic], namespace="*", from_index=from_index)  # type: ignore[list-item]
        try:
            async for resp in subscribe_resumed(self.replicas, req):
                yield resp
        except grpc.RpcError as err:
            raise translate(err) from err
        raise Unavailable("the state service ended the subscription")

    async def update_deployment(
        self, request: state_pb2.UpdateDeploymentRequest, fence: Fence
    ) -> state_pb2.UpdateDeploymentResponse:
        return await self._call("write", "UpdateDeployment", request, fence)

    async def upsert_evaluations(
        self, evaluations: Sequence[evaluation_pb2.Evaluation], fence: Fence
    ) -> int:
        resp = await self._call("write", "UpsertEvaluations",
                                state_pb2.UpsertEvaluationsRequest(evaluations=evaluations),
                                fence)
        return int(resp.index)

    async def garbage_collect(
        self, request: state_pb2.GarbageCollectRequest, fence: Fence
    ) -> state_pb2.GarbageCollectResponse:
        return await self._call("write", "GarbageCollect", request, fence)

    # -- the node drainer's calls (drainer.DrainStateApi) ----------------------

    async def list_draining_nodes(self) -> list[node_pb2.Node]:
        out: list[node_pb2.Node] = []
        token = ""
        while True:
            resp = await self._call("query", "ListNodes", state_pb2.ListNodesRequest(
                filter="drain", page_size=PAGE_SIZE, page_token=token))
            out.extend(resp.nodes)
            token = resp.next_page_token
            if not token:
                return out

    async def allocations_where(self, filter_: str) -> list[allocation_pb2.Allocation]:
        out: list[allocation_pb2.Allocation] = []
        token = ""
        while True:
            resp = await self._call("query", "ListAllocations", state_pb2.ListAllocationsRequest(
                namespace="*", page_size=PAGE_SIZE, page_token=token, filter=filter_))
            out.extend(resp.allocations)
            token = resp.next_page_token
            if not token:
                return out

    async def get_job(self, namespace: str, job_id: str) -> job_pb2.Job | None:
        try:
            resp = await self._call("query", "GetJob", state_pb2.GetJobRequest(
                namespace=namespace, id=job_id))
        except NotFound:
            return None
        return resp.job  # type: ignore[no-any-return]

    async def update_alloc_desired_transition(
        self, request: state_pb2.UpdateAllocDesiredTransitionRequest, fence: Fence
    ) -> int:
        resp = await self._call("write", "UpdateAllocDesiredTransition", request, fence)
        return int(resp.index)

    async def update_node_drain(self, request: state_pb2.UpdateNodeDrainRequest,
                                fence: Fence) -> int:
        resp = await self._call("write", "UpdateNodeDrain", request, fence)
        return int(resp.index)

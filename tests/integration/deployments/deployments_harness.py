"""Real etcd + a real state service (with UpdateDeployment wired in) + watcher
replicas as DroverServer instances; the test plays the scheduler and clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import grpc
import pytest
from polling import eventually
from state_harness import StateReplica, start_state
from state_harness import leader_fence as _leader_fence

from drover.api.deployments.v1 import deployments_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.config import EtcdSettings, ServeSettings
from drover.coord import Keyspace, LeadershipConfig
from drover.deployments.app import DeploymentsApp
from drover.deployments.config import BatcherConfig, LeaderConfig
from drover.rpc.remote import error_info
from drover.rpc.server import DroverServer


async def leader_fence(state: StateReplica) -> tuple[tuple[str, str]]:
    """A fence on a fresh election key of the test's keyspace: what the state
    service requires of leader-only writes (outcomes, UpdateDeployment)."""
    return await _leader_fence(state, "deployments")


@pytest.fixture
async def state(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[StateReplica]:
    replica = await start_state(etcd_endpoint, keyspace)
    try:
        yield replica
    finally:
        await replica.close()


#: Counts and deadlines wait 0.2 s, not 1 s: the tests' deadlines are short
#: (a progress window of its own: test_deployments_progress_window).
LEADER_CONFIG = LeaderConfig(batcher=BatcherConfig(window=0.05, progress_window=0.2),
                             restore_timeout=5.0, max_sleep=0.5)


@dataclass
class Watcher:
    server: DroverServer
    app: DeploymentsApp
    channel: grpc.aio.Channel
    stub: deployments_pb2_grpc.DeploymentWatcherServiceStub
    address: str

    async def close(self) -> None:
        await self.channel.close()
        await self.server.stop(1.0)


async def start_watcher(endpoint: str, prefix: str, state_address: str,
                        config: LeaderConfig = LEADER_CONFIG,
                        state_addresses: tuple[str, ...] = ()) -> Watcher:
    """A watcher replica seeded with ``state_address`` (or every one of
    ``state_addresses``)."""
    settings = ServeSettings(
        service="deployments",
        etcd=EtcdSettings(endpoints=(endpoint,), prefix=prefix, session_ttl=2),
        state_addresses=state_addresses or (state_address,), shutdown_grace=2.0,
    )
    app = DeploymentsApp(settings, leader_config=config,
                         leadership_config=LeadershipConfig(ttl=2, retry_backoff=0.05))
    server = DroverServer(settings, app, membership=True)
    ctx = await server.start()
    channel = grpc.aio.insecure_channel(ctx.address)
    return Watcher(server, app, channel,
                   deployments_pb2_grpc.DeploymentWatcherServiceStub(channel), ctx.address)


@pytest.fixture
async def watchers(etcd_endpoint: str, etcd_prefix: str,
                   state: StateReplica) -> AsyncIterator[list[Watcher]]:
    started: list[Watcher] = []
    try:
        yield started
    finally:
        for w in reversed(started):
            await w.close()


@pytest.fixture
async def watcher(etcd_endpoint: str, etcd_prefix: str, state: StateReplica,
                  watchers: list[Watcher]) -> Watcher:
    w = await start_watcher(etcd_endpoint, etcd_prefix, state.address)
    watchers.append(w)
    await eventually(lambda: w.app.leader is not None and w.app.leader.leading)
    return w


# -- the test plays the scheduler and the clients -------------------------------

def service_job(job_id: str, *, count: int = 2, canary: int = 0, max_parallel: int = 1,
                progress_deadline: float = 0.0, auto_revert: bool = False,
                image: str = "web:1") -> job_pb2.Job:
    update = job_pb2.UpdateStrategy(max_parallel=max_parallel, canary=canary,
                                    auto_revert=auto_revert)
    if progress_deadline:
        update.progress_deadline.FromNanoseconds(int(progress_deadline * 1e9))
    task = job_pb2.Task(name="server", driver="docker", config={"image": image})
    group = job_pb2.TaskGroup(name="web", count=count, update=update, tasks=[task])
    return job_pb2.Job(id=job_id, namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                       datacenters=["dc1"], task_groups=[group])


@dataclass
class Scheduler:
    stub: state_pb2_grpc.StateServiceStub
    placed: list[str] = field(default_factory=list)

    async def register(self, job: job_pb2.Job) -> state_pb2.RegisterJobResponse:
        if any(tg.update.canary for tg in job.task_groups):
            # Canaries replace an earlier version (none on a job's first, as in
            # Nomad): register a different first version unless there is one.
            try:
                await self.stub.GetJob(state_pb2.GetJobRequest(
                    namespace=job.namespace or "default", id=job.id))
            except grpc.aio.AioRpcError:
                first = job_pb2.Job()
                first.CopyFrom(job)
                first.meta["harness-first-version"] = "true"
                await self.stub.RegisterJob(state_pb2.RegisterJobRequest(job=first))
        return await self.stub.RegisterJob(state_pb2.RegisterJobRequest(job=job))

    async def place(self, d: deployment_pb2.Deployment, n: int, *,
                    canary: bool = False) -> list[str]:
        allocs = []
        for _ in range(n):
            alloc_id = f"{d.id[:8]}-{len(self.placed)}"
            self.placed.append(alloc_id)
            a = allocation_pb2.Allocation(
                id=alloc_id, namespace=d.namespace, job_id=d.job_id,
                job_version=d.job_version, task_group="web", deployment_id=d.id,
                node_id="n1", desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
                client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)
            a.deployment_status.canary = canary
            allocs.append(a)
        await self.stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=allocs))
        return [a.id for a in allocs]

    async def health(self, alloc_ids: list[str], healthy: bool = True) -> int:
        resp = await self.stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(updates=[
            state_pb2.AllocationUpdate(namespace="default", id=i, healthy=healthy)
            for i in alloc_ids]))
        return int(resp.index)

    async def deployment(self, deployment_id: str) -> deployment_pb2.Deployment:
        resp = await self.stub.GetDeployment(
            state_pb2.GetDeploymentRequest(namespace="default", id=deployment_id))
        return resp.deployment  # type: ignore[no-any-return]

    async def wait_deployment(self, deployment_id: str,
                              pred: Callable[[deployment_pb2.Deployment], bool],
                              within: float = 5.0, what: str = "deployment") -> (
            deployment_pb2.Deployment):
        seen: list[deployment_pb2.Deployment] = []

        async def check() -> bool:
            d = await self.deployment(deployment_id)
            seen[:] = [d]
            return pred(d)

        try:
            await eventually(check, within, what)
        except AssertionError as err:
            raise AssertionError(f"{err}; last seen: {seen[0] if seen else None}") from None
        return seen[0]


@pytest.fixture
def scheduler(state: StateReplica) -> Scheduler:
    return Scheduler(state.stub)


def reason_of(err: grpc.RpcError) -> str:
    info = error_info(err)
    return info.reason if info is not None else ""

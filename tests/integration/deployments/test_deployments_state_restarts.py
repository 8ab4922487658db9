"""The watcher steering deployments while its state replicas go away (issue 41).

The rolling-upgrade drill left a deployment ``running`` forever, in about
one run in three, after the state replicas were restarted one at a time.
Two real state replicas on the session etcd, the watcher served by
DroverServer and seeded with both; the test plays the scheduler and the
clients:

- a watcher write that a state replica answers UNAVAILABLE (it went away
  before or after applying it: the outcome is unknown) is not lost: the
  watcher re-reads the deployment and decides again, so the deployment
  still finishes;
- seeded restarts: each replica in turn is stopped (as SIGTERM stops one)
  and started again on its address while deployments roll out and their
  allocations turn healthy; every deployment ends SUCCESSFUL within a bound;
- whatever else leaves an active deployment without a watcher, the leader's
  audit (a periodic list of the active deployments) tracks it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from deployments_harness import LEADER_CONFIG, Scheduler, Watcher, service_job, start_watcher
from polling import eventually
from state_harness import StateReplica, start_state

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import deployment_pb2
from drover.coord.keys import Keyspace

SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
UPDATE_DEPLOYMENT = "/drover.state.v1.StateService/UpdateDeployment"
#: Restarts of the seeded test: ``DROVER_RESTART_SEED`` reruns one.
SEED = int(os.environ.get("DROVER_RESTART_SEED", "1"))
#: How long the deployments may take to finish once the restarts stop.
SETTLE = 20.0


@dataclass
class LostAnswers(grpc.aio.ServerInterceptor):
    """Answers the next ``left`` calls of ``method`` (on any replica sharing
    this object) UNAVAILABLE, as a replica that stops mid-call does:
    ``applied`` says whether the write went through first."""

    method: str
    applied: bool
    left: int = 0
    lost: list[str] = field(default_factory=list)

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None or details.method != self.method:
            return handler
        inner = handler.unary_unary

        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if self.left <= 0:
                return await inner(request, context)
            self.left -= 1
            self.lost.append(request.deployment.id)
            if self.applied:
                await inner(request, context)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "test: the replica went away")

        return grpc.unary_unary_rpc_method_handler(
            call, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)


@pytest.fixture
async def two_states(etcd_endpoint: str, keyspace: Keyspace) -> AsyncIterator[
        tuple[list[StateReplica], LostAnswers]]:
    faults = LostAnswers(UPDATE_DEPLOYMENT, applied=False)
    replicas = [await start_state(etcd_endpoint, keyspace, interceptors=(faults,))
                for _ in range(2)]
    try:
        yield replicas, faults
    finally:
        for r in replicas:
            await r.close()


@pytest.fixture
async def watcher2(etcd_endpoint: str, etcd_prefix: str,
                   two_states: tuple[list[StateReplica], LostAnswers]) -> AsyncIterator[Watcher]:
    replicas, _ = two_states
    w = await start_watcher(etcd_endpoint, etcd_prefix, replicas[0].address,
                            state_addresses=tuple(r.address for r in replicas))
    try:
        await eventually(lambda: w.app.leader is not None and w.app.leader.leading, 10.0,
                         "a leading watcher")
        yield w
    finally:
        await w.close()


@pytest.mark.parametrize("applied", [False, True], ids=["refused", "answer-lost"])
async def test_a_write_answered_unavailable_is_decided_again(
    applied: bool, watcher2: Watcher,
    two_states: tuple[list[StateReplica], LostAnswers],
) -> None:
    replicas, faults = two_states
    scheduler = Scheduler(replicas[0].stub)
    reg = await scheduler.register(service_job("api", count=1))
    d = await scheduler.deployment(reg.deployment_id)
    [alloc] = await scheduler.place(d, 1)
    await scheduler.wait_deployment(d.id, lambda x: x.task_groups["web"].placed_allocs == 1)
    faults.applied, faults.left = applied, 1
    await scheduler.health([alloc])
    await eventually(lambda: faults.lost, 5.0, "the watcher's write answered UNAVAILABLE")
    done = await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL, within=8.0,
                                           what="the deployment successful after a lost write")
    assert done.task_groups["web"].healthy_allocs == 1
    assert done.status_description == "Deployment completed successfully"


# -- seeded restarts ------------------------------------------------------------

@dataclass
class Restartable:
    """A state replica that can be stopped and started again on its address."""

    endpoint: str
    keyspace: Keyspace
    replica: StateReplica
    address: str = ""

    def __post_init__(self) -> None:
        self.address = self.replica.address

    async def restart(self, away: float) -> None:
        await self.replica.close()  # the server stops first, then its etcd client
        await asyncio.sleep(away)
        port = int(self.address.rsplit(":", 1)[1])
        self.replica = await start_state(self.endpoint, self.keyspace, port=port)


async def _retried(stubs: list[state_pb2_grpc.StateServiceStub],
                   call: Callable[[state_pb2_grpc.StateServiceStub], Awaitable[Any]]) -> Any:
    """A scheduler's or a node's idempotent call, retried on the replicas in
    turn while they restart (a restarted one's channel may still back off)."""
    for attempt in range(200):
        try:
            return await call(stubs[attempt % len(stubs)])
        except grpc.aio.AioRpcError as err:
            if err.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                                  grpc.StatusCode.DEADLINE_EXCEEDED):
                raise
        await asyncio.sleep(0.05)
    raise AssertionError("a call failed 200 times in a row")


def _health_of(alloc_id: str) -> Callable[[state_pb2_grpc.StateServiceStub], Awaitable[Any]]:
    return lambda s: Scheduler(s).health([alloc_id])


def _get_deployment(d_id: str) -> Callable[[state_pb2_grpc.StateServiceStub], Awaitable[Any]]:
    req = state_pb2.GetDeploymentRequest(namespace="default", id=d_id)
    return lambda s: s.GetDeployment(req)


async def test_deployments_finish_while_state_replicas_restart_one_at_a_time(
    etcd_endpoint: str, etcd_prefix: str, keyspace: Keyspace,
) -> None:
    rng = random.Random(SEED)
    states = [Restartable(etcd_endpoint, keyspace, await start_state(etcd_endpoint, keyspace))
              for _ in range(2)]
    channels = [grpc.aio.insecure_channel(s.address) for s in states]
    stubs = [state_pb2_grpc.StateServiceStub(ch) for ch in channels]
    w = await start_watcher(etcd_endpoint, etcd_prefix, states[0].address,
                            state_addresses=tuple(s.address for s in states))
    stop = asyncio.Event()
    restarts = 0

    async def restarter() -> None:
        nonlocal restarts
        while not stop.is_set():
            await asyncio.sleep(rng.uniform(0.05, 0.3))
            await states[restarts % 2].restart(rng.uniform(0.05, 0.4))
            restarts += 1

    def order() -> list[state_pb2_grpc.StateServiceStub]:
        return stubs[::-1] if rng.random() < 0.5 else stubs

    async def roll_out(i: int) -> str:
        """Register, place two allocations, report them healthy one by one."""
        job = service_job(f"svc-{i}", count=2, max_parallel=2)
        reg = await _retried(order(), lambda s: s.RegisterJob(
            state_pb2.RegisterJobRequest(job=job)))
        d = (await _retried(order(), lambda s: s.GetDeployment(state_pb2.GetDeploymentRequest(
            namespace="default", id=reg.deployment_id)))).deployment
        ids = await _retried(order(), lambda s: Scheduler(s).place(d, 2))
        for alloc_id in ids:
            await asyncio.sleep(rng.uniform(0.0, 0.5))
            await _retried(order(), _health_of(alloc_id))
        return str(d.id)

    try:
        await eventually(lambda: w.app.leader is not None and w.app.leader.leading, 10.0,
                         "a leading watcher")
        task = asyncio.create_task(restarter())
        try:
            ids = []
            for wave in range(5):
                ids += await asyncio.gather(*(roll_out(wave * 4 + i) for i in range(4)))
        finally:
            stop.set()
            await task
        assert restarts >= 2

        async def statuses() -> dict[str, int]:
            out = {}
            for d_id in ids:
                got = await _retried(stubs, _get_deployment(d_id))
                out[d_id] = got.deployment.status
            return out

        last: dict[str, int] = {}

        async def all_successful() -> bool:
            last.update(await statuses())
            return all(s == SUCCESSFUL for s in last.values())

        await eventually(all_successful, SETTLE, f"every deployment successful (seed {SEED}, "
                         f"{restarts} restarts)", step=0.2,
                         detail=lambda: {k[:8]: deployment_pb2.DeploymentStatus.Name(v)
                                         for k, v in last.items() if v != SUCCESSFUL})
    finally:
        await w.close()
        for ch in channels:
            await ch.close()
        for s in states:
            await s.replica.close()


async def test_an_active_deployment_left_without_a_watcher_is_tracked_again(
    etcd_endpoint: str, etcd_prefix: str,
    two_states: tuple[list[StateReplica], LostAnswers],
) -> None:
    """The audit: whatever lost a deployment's watcher (an event the streams
    never delivered, a re-read given up), the leader's periodic list finds it
    active and unwatched, and tracks it again."""
    replicas, _ = two_states
    w = await start_watcher(etcd_endpoint, etcd_prefix, replicas[0].address,
                            config=dataclasses.replace(LEADER_CONFIG, audit_interval=0.3),
                            state_addresses=tuple(r.address for r in replicas))
    try:
        await eventually(lambda: w.app.leader is not None and w.app.leader.leading, 10.0,
                         "a leading watcher")
        scheduler = Scheduler(replicas[1].stub)
        reg = await scheduler.register(service_job("lost", count=1))
        d = await scheduler.deployment(reg.deployment_id)
        leader = w.app.leader
        assert leader is not None
        run = leader._run
        assert run is not None
        await eventually(lambda: d.id in run.manager.tracked(), 5.0, "the deployment watched")
        run.manager.untrack(d.id)  # as if its events had never arrived
        run.stored.pop(d.id, None)
        [alloc] = await scheduler.place(d, 1)
        await scheduler.health([alloc])
        done = await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL,
                                               within=8.0, what="the lost deployment finished")
        assert done.task_groups["web"].healthy_allocs == 1
    finally:
        await w.close()

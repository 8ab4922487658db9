"""drover's own writers racing on one deployment never fail a user's call:
SetAllocHealth on some allocations while the nodes report the health of
the others and re-report the user's (each report moves the allocations
the user's call writes, and the deployment: the watcher writes it) is
OK for every call, the conflicts retried inside the state service. Real
etcd, the state service and the watcher served by DroverServer."""

from __future__ import annotations

import asyncio

import grpc
from deployments_harness import Scheduler, Watcher, service_job

from drover.api.deployments.v1 import deployments_pb2
from drover.api.types.v1 import deployment_pb2

SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
ALLOCS = 24
REPORTS = 3


async def test_set_alloc_health_racing_client_reports_and_the_watcher_never_conflicts(
        watcher: Watcher, scheduler: Scheduler) -> None:
    reg = await scheduler.register(service_job("race", count=ALLOCS, max_parallel=ALLOCS))
    d = await scheduler.deployment(reg.deployment_id)
    ids = await scheduler.place(d, ALLOCS)
    by_user, by_nodes = ids[::2], ids[1::2]

    async def user(alloc_id: str) -> object:
        return await watcher.stub.SetAllocHealth(deployments_pb2.SetAllocHealthRequest(
            deployment_id=d.id, healthy_allocation_ids=[alloc_id]), timeout=30)

    async def node(alloc_id: str) -> object:
        # a node reports its allocation, and again: every report is a write
        # of the allocation the user's call may be marking too
        for _ in range(REPORTS):
            await scheduler.health([alloc_id, *by_user])
        return None

    outcomes = await asyncio.gather(*(f(i) for pair in zip(by_user, by_nodes, strict=True)
                                      for f, i in ((user, pair[0]), (node, pair[1]))),
                                    return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert not failed, [f"{o.code().name}: {o.details()}" if isinstance(o, grpc.aio.AioRpcError)
                        else repr(o) for o in failed]
    await scheduler.wait_deployment(d.id, lambda x: x.status == SUCCESSFUL, within=20)

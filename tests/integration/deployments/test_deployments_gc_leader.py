"""GC run by the deployment watcher's leader, against a real etcd and state
service: `CollectGarbage` forces a pass (leader only), and the leader's
periodic pass collects on its own with the configured thresholds."""

from __future__ import annotations

import dataclasses

import grpc
import pytest
from deployments_harness import (
    LEADER_CONFIG,
    Scheduler,
    StateReplica,
    Watcher,
    service_job,
    start_watcher,
)
from polling import eventually

from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.config import EtcdSettings, GcSettings, ServeSettings
from drover.coord import Keyspace, LeadershipConfig
from drover.coord.fence import Fence
from drover.coord.kv import Put
from drover.deployments.app import DeploymentsApp
from drover.rpc.server import DroverServer
from drover.state.app import EtcdStore

COMPLETE = evaluation_pb2.EVALUATION_STATUS_COMPLETE


async def terminal_evals(state: StateReplica, n: int, prefix: str) -> None:
    """Terminal statuses are leader writes: written under a fence of our own
    (the broker's would do the same)."""
    key = Keyspace(prefix).election_prefix("broker") + "test"
    fence = Fence(key, (await EtcdStore(state.etcd_channel).txn(
        [], [Put(key.encode(), b"")])).revision)
    for start in range(0, n, 100):
        await state.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
            evaluation_pb2.Evaluation(id=f"old-{i}", type="service", status=COMPLETE)
            for i in range(start, min(n, start + 100))]), metadata=fence.metadata())


async def eval_count(state: StateReplica) -> int:
    resp = await state.stub.CountEvaluations(state_pb2.CountEvaluationsRequest(namespace="*"))
    return int(resp.count)


async def test_forced_gc_on_the_leader_and_refused_on_a_follower(
    watcher: Watcher, watchers: list[Watcher], scheduler: Scheduler, state: StateReplica,
    etcd_endpoint: str, etcd_prefix: str,
) -> None:
    await terminal_evals(state, 130, etcd_prefix)
    reg = await scheduler.register(service_job("shop", count=1))
    d = await scheduler.deployment(reg.deployment_id)
    # Respecting the thresholds (1 h), nothing this young goes.
    kept = await watcher.stub.CollectGarbage(deployments_pb2.CollectGarbageRequest())
    assert kept.evaluations == 0 and kept.examined >= 131
    forced = await watcher.stub.CollectGarbage(deployments_pb2.CollectGarbageRequest(force=True))
    assert forced.evaluations == 130 and forced.largest_txn <= 128 and forced.txns == 2
    assert forced.duration_seconds > 0
    assert await eval_count(state) == 1  # the job's pending register eval
    assert (await scheduler.deployment(d.id)).id == d.id  # running: not collected

    follower = await start_watcher(etcd_endpoint, etcd_prefix, state.address)
    watchers.append(follower)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await follower.stub.CollectGarbage(deployments_pb2.CollectGarbageRequest(force=True))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_the_leader_collects_periodically(
    state: StateReplica, etcd_endpoint: str, etcd_prefix: str,
) -> None:
    settings = ServeSettings(
        service="deployments",
        etcd=EtcdSettings(endpoints=(etcd_endpoint,), prefix=etcd_prefix, session_ttl=2),
        state_addresses=(state.address,), shutdown_grace=2.0,
        gc=GcSettings(interval=0.2, eval_threshold=0.0, deployment_threshold=0.0,
                      job_threshold=0.0, node_threshold=0.0),
    )
    app = DeploymentsApp(settings, leader_config=dataclasses.replace(LEADER_CONFIG),
                         leadership_config=LeadershipConfig(ttl=2, retry_backoff=0.05))
    server = DroverServer(settings, app, membership=True)
    ctx = await server.start()
    channel = grpc.aio.insecure_channel(ctx.address)
    try:
        await terminal_evals(state, 50, etcd_prefix)
        await eventually(lambda: eval_count_is_zero(state), within=10.0,
                       what="the periodic pass to collect")
        gc = app.leader.gc if app.leader is not None else None
        assert gc is not None
        await eventually(lambda: gc.last is not None, what="the pass to end")
        stub = deployments_pb2_grpc.DeploymentWatcherServiceStub(channel)
        assert (await stub.GetWatcherStats(deployments_pb2.GetWatcherStatsRequest())).leader
    finally:
        await channel.close()
        await server.stop(1.0)


async def eval_count_is_zero(state: StateReplica) -> bool:
    return await eval_count(state) == 0

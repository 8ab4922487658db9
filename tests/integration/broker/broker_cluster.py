"""Helpers: two broker replicas over a real etcd and a real state service, in-process.

Each replica is a :class:`DroverServer` with membership on (session TTL
2 s), so elections, fences and leader hints are the production ones.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.app import BrokerApp
from drover.broker.config import BrokerConfig, ShellConfig
from drover.config import EtcdSettings, ServeSettings
from drover.coord import LeadershipConfig
from drover.rpc.server import DroverServer
from drover.state.app import create_app as create_state_app

TTL = 2


@dataclass
class BrokerNode:
    server: DroverServer
    app: BrokerApp
    channel: grpc.aio.Channel
    stub: broker_pb2_grpc.EvalBrokerServiceStub
    stopped: bool = False

    @property
    def address(self) -> str:
        assert self.server.ctx is not None
        return self.server.ctx.address

    @property
    def leading(self) -> bool:
        return not self.stopped and self.app.runtime.term is not None

    async def stop(self, grace: float = 2.0) -> None:
        if not self.stopped:
            self.stopped = True
            # The channel stays open (closed at teardown): a caller mid-call
            # sees the server's answer, not a local cancellation.
            await self.server.stop(grace)


@dataclass
class Cluster:
    etcd: str
    prefix: str
    state: DroverServer
    state_channel: grpc.aio.Channel
    state_stub: state_pb2_grpc.StateServiceStub
    config: BrokerConfig
    shell: ShellConfig = field(default_factory=lambda: ShellConfig(hint_wait=1.5))
    nodes: list[BrokerNode] = field(default_factory=list)

    async def add_broker(self) -> BrokerNode:
        settings = ServeSettings(
            service="broker",
            etcd=EtcdSettings(endpoints=(self.etcd,), prefix=self.prefix, session_ttl=TTL),
            state_addresses=(self.state_address,),
            shutdown_grace=2.0,
        )
        app = BrokerApp(
            settings,
            broker_config=self.config,
            shell_config=self.shell,
            leadership_config=LeadershipConfig(ttl=TTL, establish_timeout=5.0,
                                               revoke_timeout=2.0, retry_backoff=0.1),
        )
        server = DroverServer(settings, app, membership=True)
        await server.start()
        ch = grpc.aio.insecure_channel(server.ctx.address if server.ctx else "")
        node = BrokerNode(server, app, ch, broker_pb2_grpc.EvalBrokerServiceStub(ch))
        self.nodes.append(node)
        return node

    @property
    def state_address(self) -> str:
        assert self.state.ctx is not None
        return self.state.ctx.address

    async def leader(self, within: float = 10.0, *, exclude: BrokerNode | None = None
                     ) -> BrokerNode:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node is not exclude and node.leading:
                    return node
            await asyncio.sleep(0.02)
        raise AssertionError("no broker leader was established")

    def follower_of(self, leader: BrokerNode) -> BrokerNode:
        return next(n for n in self.nodes if n is not leader and not n.stopped)

    async def upsert(self, *evaluations: Evaluation) -> int:
        resp = await self.state_stub.UpsertEvaluations(
            state_pb2.UpsertEvaluationsRequest(evaluations=evaluations), timeout=10)
        return int(resp.index)

    async def get_eval(self, eval_id: str) -> Evaluation:
        resp = await self.state_stub.GetEvaluation(
            state_pb2.GetEvaluationRequest(namespace="*", id=eval_id), timeout=10)
        return resp.evaluation


def make_eval(eval_id: str, *, job: str | None = None, scheduler: str = "service",
              priority: int = 50) -> Evaluation:
    return Evaluation(id=eval_id, namespace="default", priority=priority, type=scheduler,
                      job_id=job or f"job-{eval_id}", triggered_by="job-register",
                      status=EvaluationStatus.EVALUATION_STATUS_PENDING)


async def dequeue(node: BrokerNode, *schedulers: str, poll: float = 2.0
                  ) -> broker_pb2.DequeueResponse:
    req = broker_pb2.DequeueRequest(schedulers=schedulers or ("service",))
    req.timeout.FromMilliseconds(int(poll * 1000))
    return await node.stub.Dequeue(req, timeout=poll + 5)


async def start_cluster(etcd: str, prefix: str, config: BrokerConfig, brokers: int = 2,
                        shell: ShellConfig | None = None) -> Cluster:
    settings = ServeSettings(
        service="state",
        etcd=EtcdSettings(endpoints=(etcd,), prefix=prefix, session_ttl=TTL),
    )
    state = DroverServer(settings, create_state_app(settings))
    await state.start()
    assert state.ctx is not None
    ch = grpc.aio.insecure_channel(state.ctx.address)
    cluster = Cluster(etcd, prefix, state, ch, state_pb2_grpc.StateServiceStub(ch), config)
    if shell is not None:
        cluster.shell = shell
    for _ in range(brokers):
        await cluster.add_broker()
    return cluster


async def stop_cluster(cluster: Cluster) -> None:
    for node in cluster.nodes:
        await node.stop()
        await node.channel.close()
    await cluster.state_channel.close()
    await cluster.state.stop(1.0)

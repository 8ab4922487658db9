"""Wiring of the deployment watcher for `drover serve deployments`.

Every replica serves the API; one leads (etcd election under the service's
name, session TTL from ``--etcd-session-ttl``) and only the leader runs the
:class:`~.leader.WatcherLeader`. The server must run with membership on,
which provides the control etcd client (``ctx.etcd``) the election uses.
The state service: every replica membership lists (followed for the
process lifetime), ``settings.state_addresses`` as the seed and the
fallback while membership lists none; calls spread over them and fail over
(:class:`~drover.rpc.replicas.ReplicaPool`).

``stop`` resigns first (bounded): leader work is cancelled and the election
key deleted, so a follower takes over at once instead of after the TTL.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from typing import Any

from drover.api.deployments.v1 import deployments_pb2_grpc
from drover.config import ServeSettings, tuned_config
from drover.coord import Keyspace, Leadership, LeadershipConfig, observe
from drover.deployments.config import GcConfig, LeaderConfig
from drover.errors import DroverError
from drover.rpc.propagation import ServerToken
from drover.rpc.readiness import leader_known
from drover.rpc.replicas import ReplicaPool, state_replicas
from drover.rpc.server import App, AppContext, ServiceBinding

from . import metrics
from .config import BatcherConfig, DrainerConfig
from .drainer import NodeDrainer
from .gc import GarbageCollector
from .leader import WatcherLeader
from .servicer import DeploymentWatcherServicer
from .state_api import GrpcStateApi

SERVICE = "drover.deployments.v1.DeploymentWatcherService"


class DeploymentsApp:
    def __init__(self, settings: ServeSettings, *, leader_config: LeaderConfig | None = None,
                 leadership_config: LeadershipConfig | None = None) -> None:
        self.settings = settings
        self.server_token = ServerToken()  # the server identity, with ACLs on
        self._leadership_config = leadership_config or LeadershipConfig(
            ttl=settings.etcd.session_ttl)
        self._leader_config = leader_config or LeaderConfig()
        self.state: ReplicaPool | None = None
        self._etcd: Any = None
        self.leadership: Leadership | None = None
        self.leader: WatcherLeader | None = None
        self.drainer: NodeDrainer | None = None
        self.servicer: DeploymentWatcherServicer | None = None
        self._unregister: list[Any] = []

    def set_server_token(self, secret: str) -> None:
        self.server_token.secret = secret

    @property
    def bindings(self) -> Sequence[ServiceBinding]:
        assert self.servicer is not None, "prepare() first"
        return [ServiceBinding(
            SERVICE, self.servicer,
            deployments_pb2_grpc.add_DeploymentWatcherServiceServicer_to_server)]

    async def prepare(self) -> None:
        self.state = state_replicas(self.settings, self.server_token)
        api = GrpcStateApi(self.state)
        gc = GarbageCollector(api, GcConfig.from_settings(self.settings.gc))
        self.leader = WatcherLeader(api, self.settings.service, config=self._leader_config,
                                    new_id=new_eval_id, gc=gc)
        # The node drainer is leader work too: it leads with the watcher.
        self.drainer = NodeDrainer(api, self.settings.service, config=DrainerConfig(),
                                   new_id=new_eval_id)
        self.servicer = DeploymentWatcherServicer(self.leader, self._leader_hint)

    async def start(self, ctx: AppContext) -> None:
        if ctx.etcd is None:
            raise RuntimeError("the deployment watcher needs DroverServer(membership=True)")
        self._etcd = ctx.etcd
        keyspace = Keyspace(self.settings.etcd.prefix)
        assert self.state is not None, "prepare() first"
        await self.state.discover(ctx.etcd, keyspace)
        ctx.tasks.append(asyncio.create_task(self.state.follow(ctx.etcd, keyspace),
                                             name="deployments-state-replicas"))
        assert self.leader is not None, "prepare() first"
        self.leadership = Leadership(ctx.etcd, Keyspace(self.settings.etcd.prefix),
                                     self.settings.service, ctx.address,
                                     [self.leader, *([self.drainer] if self.drainer else [])],
                                     config=self._leadership_config)
        self._unregister = metrics.register(self.leader)
        self.leadership.start()
        ctx.health.add_check("leader", leader_known(
            ctx.etcd, Keyspace(self.settings.etcd.prefix), self.settings.service))
        await ctx.health.set_all_ready(True)

    async def stop(self) -> None:
        for close in self._unregister:
            close()
        if self.leadership is not None:
            await self.leadership.resign(grace=self._leadership_config.revoke_timeout)
        if self.state is not None:
            await self.state.close()

    async def _leader_hint(self) -> tuple[str, int] | None:
        # Only a leader that has established is advertised (no bouncing to
        # one still restoring its deployments).
        if self._etcd is None:
            return None
        with contextlib.suppress(DroverError):
            info = await observe(self._etcd, Keyspace(self.settings.etcd.prefix),
                                 self.settings.service)
            if info is not None and info.established and (
                    self.leadership is None or info.address != self.leadership.address):
                return info.address, info.term
        return None


def new_eval_id() -> str:
    """The id of an evaluation the watcher or the drainer creates."""
    return str(uuid.uuid4())


def leader_config(settings: ServeSettings) -> LeaderConfig:
    """The leader's config with the tunables ``settings`` carries (flags/env)."""
    return LeaderConfig(batcher=tuned_config(BatcherConfig, settings))


def create_app(settings: ServeSettings) -> App:
    return DeploymentsApp(settings, leader_config=leader_config(settings))

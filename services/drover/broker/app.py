"""Wiring of the eval broker for `drover serve broker`.

Start-up order: find the state replicas (membership, followed for the
process lifetime; ``--state-address`` is the seed and the fallback while
membership lists none), restore the hot standby from them, report SERVING,
then campaign. Calls spread over every replica and fail over
(:class:`~drover.rpc.replicas.ReplicaPool`). Campaigning only after the
first restore means a replica never wins an election it could not serve
within the establish deadline.
Background tasks: the event feed, the timer loop and the leader observer
(for ``drover-leader`` hints), all for the process lifetime.

Shutdown (``stop``): resign first (revoke: the broker drops to standby,
tokens die, the store still has those evaluations pending, so the next
leader delivers them at once), then let open long polls end with the next
leader's address (bounded by ``ShellConfig.hint_wait``). A stop cut short
(the server's shutdown grace) still ends every open poll at once, with
NOT_LEADER: a poll never waits for the server to cancel it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from drover.api.broker.v1 import broker_pb2_grpc
from drover.broker import metrics
from drover.broker.config import BrokerConfig, ShellConfig
from drover.broker.core.broker import EvalBroker
from drover.broker.runtime import BrokerRuntime
from drover.broker.servicer import BrokerServicer
from drover.broker.state_api import GrpcStateApi
from drover.config import ServeSettings, tuned_config
from drover.coord import (
    Keyspace,
    Leadership,
    LeadershipConfig,
    cluster_secret,
    observe,
    observe_changes,
)
from drover.gc_policy import GcPolicy
from drover.paging import CLUSTER_SECRET, PageTokenCodec
from drover.rpc.propagation import ServerToken
from drover.rpc.readiness import leader_known
from drover.rpc.replicas import state_replicas
from drover.rpc.server import App, AppContext, ServiceBinding
from drover.tasks import cancel_and_wait

__all__ = ["SERVICE", "BrokerApp", "create_app"]

log = logging.getLogger(__name__)

SERVICE = "drover.broker.v1.EvalBrokerService"



def shifted_to_wall(clock: Callable[[], float]) -> Callable[[], float]:
    """``clock`` shifted to the wall time now, so one clock drives both."""
    offset = time.time() - clock()
    return lambda: clock() + offset


class BrokerApp:
    def __init__(
        self,
        settings: ServeSettings,
        *,
        broker_config: BrokerConfig | None = None,
        shell_config: ShellConfig | None = None,
        leadership_config: LeadershipConfig | None = None,
    ) -> None:
        self.settings = settings
        self.server_token = ServerToken()  # the server identity, with ACLs on
        self.state = state_replicas(settings, self.server_token)
        self.api = GrpcStateApi(self.state)
        self.core = EvalBroker(broker_config or BrokerConfig(), clock=time.monotonic,
                               rng=random.Random(), wall_clock=shifted_to_wall(time.monotonic))
        self.gc_policy = GcPolicy()
        self.runtime = BrokerRuntime(self.api, self.core, address="",
                                     config=shell_config or ShellConfig(),
                                     gc_policy=self.gc_policy)
        self.servicer = BrokerServicer(self.runtime)
        self.leadership: Leadership | None = None
        self._leadership_config = leadership_config or LeadershipConfig(
            ttl=settings.etcd.session_ttl)
        self._tasks: list[asyncio.Task[Any]] = []
        self._unregister: list[Any] = []

    def set_server_token(self, secret: str) -> None:
        self.server_token.secret = secret

    @property
    def bindings(self) -> Sequence[ServiceBinding]:
        return [
            ServiceBinding(SERVICE, self.servicer,
                           broker_pb2_grpc.add_EvalBrokerServiceServicer_to_server)
        ]

    async def prepare(self) -> None:
        pass

    async def start(self, ctx: AppContext) -> None:
        self.runtime.address = ctx.address
        self.gc_policy.start()
        self._unregister = metrics.register(self.core)
        keyspace = Keyspace(self.settings.etcd.prefix)
        await self.state.discover(ctx.etcd, keyspace)
        if ctx.etcd is not None:
            self._spawn(ctx, self.state.follow(ctx.etcd, keyspace), "broker-state-replicas")
        if ctx.etcd is not None:
            secret = await cluster_secret(ctx.etcd, keyspace, CLUSTER_SECRET)
            self.servicer.queue.use_codec(PageTokenCodec(secret))
        self._spawn(ctx, self.runtime.feed.run(), "broker-feed")
        self._spawn(ctx, self.runtime.run_timers(), "broker-timers")
        if ctx.etcd is not None:
            etcd = ctx.etcd
            self.runtime.guard.use_lookup(lambda: self._current_leader(etcd, keyspace))
            self._spawn(ctx, self._observe(ctx.etcd, keyspace), "broker-observer")
            self.leadership = Leadership(ctx.etcd, keyspace, self.settings.service,
                                         ctx.address, [self.runtime],
                                         config=self._leadership_config)
            ctx.health.add_check("leader", leader_known(ctx.etcd, keyspace,
                                                        self.settings.service))
        self._spawn(ctx, self._serve_when_restored(ctx), "broker-start")

    def _spawn(self, ctx: AppContext, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.append(task)
        ctx.tasks.append(task)

    async def _serve_when_restored(self, ctx: AppContext) -> None:
        await self.runtime.feed.restored.wait()
        await ctx.health.set_all_ready(True)
        if self.leadership is not None:
            self.leadership.start()

    async def _current_leader(self, client: Any, keyspace: Keyspace) -> tuple[str, int] | None:
        """A fresh read of the election (for a refusal's hint): the leader
        and its term, once it has established (never one still restoring)."""
        info = await observe(client, keyspace, self.settings.service, rpc_timeout=1.0)
        return (info.address, info.term) if info is not None and info.established else None

    async def _observe(self, client: Any, keyspace: Keyspace) -> None:
        async for info in observe_changes(client, keyspace, self.settings.service):
            if info is None:
                self.runtime.observed_leader(None)
            else:
                self.runtime.observed_leader(info.address, info.term, info.established)

    async def stop(self) -> None:
        for close in self._unregister:
            close()
        try:
            if self.leadership is not None:
                await self.leadership.resign(grace=self._leadership_config.revoke_timeout)
            await self.runtime.drain_polls()
        finally:
            # Cut short (the server bounds stop by its shutdown grace): no poll
            # stays parked for the server to cancel later without a hint.
            self.runtime.polls.fail_all(self.runtime.not_leader())
        await cancel_and_wait(self._tasks, within=self.settings.stop_timeout, what="broker stop")
        await self.state.close()


def create_app(settings: ServeSettings) -> App:
    """The broker, its configs built with the tunables ``settings`` carries."""
    return BrokerApp(settings, broker_config=tuned_config(BrokerConfig, settings),
                     shell_config=tuned_config(ShellConfig, settings))

"""The async half of a rebalance: health pings and the periodic schedule.

:meth:`ServerList.begin_rebalance` hands out a shuffled plan; this pings
the plan's servers in order with ``grpc.health.v1.Health/Check`` for the
backend's own service name (a short timeout: a slow server is as good as
a dead one for the front of a list) and stops at the first SERVING one, as
Nomad does; :meth:`ServerList.finish_rebalance` decides the new order.

The schedule scales with cluster size (:mod:`drover.proxy.core.interval`). The
"clients" of the backends are the proxy replicas themselves (clients of the
proxy never connect to a backend), so the client count is the number of
live proxy replicas in membership.

At most one rebalance per service runs at a time (a lock per service), so a
RebalanceServers call and the periodic loop never interleave their pings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from drover.proxy.core.rebalance import PingResult, RebalanceOutcome
from drover.proxy.core.server_lists import ServerLists

log = logging.getLogger(__name__)

DEFAULT_PING_TIMEOUT = 1.0
#: How often the loop looks for a due rebalance (the due times are minutes apart).
TICK = 1.0


class Channels(Protocol):
    def get(self, address: str) -> grpc.aio.Channel: ...


class Rebalancer:
    def __init__(
        self,
        lists: ServerLists,
        channels: Channels,
        *,
        health_names: Mapping[str, Sequence[str]],
        clients: Callable[[], int],
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
    ) -> None:
        self._lists = lists
        self._channels = channels
        self._health_names = health_names
        self._clients = clients
        self._ping_timeout = ping_timeout
        self._locks = {s: asyncio.Lock() for s in lists.services}

    async def ping(self, service: str, address: str) -> bool:
        """True if ``address`` reports every service of ``service`` SERVING."""
        stub = health_pb2_grpc.HealthStub(self._channels.get(address))
        try:
            for name in self._health_names.get(service, ("",)):
                resp = await stub.Check(
                    health_pb2.HealthCheckRequest(service=name), timeout=self._ping_timeout
                )
                if resp.status != health_pb2.HealthCheckResponse.SERVING:
                    return False
        except grpc.aio.AioRpcError as e:
            log.debug("ping %s (%s): %s", address, service, e.code().name)
            return False
        return True

    async def rebalance(self, service: str) -> RebalanceOutcome:
        async with self._locks[service]:
            lst = self._lists.get(service)
            plan = lst.begin_rebalance()
            results: list[PingResult] = []
            for server in plan.order:
                healthy = await self.ping(service, server.address)
                results.append(PingResult(server.address, healthy))
                if healthy:
                    break
            outcome = lst.finish_rebalance(plan, results)
            lst.schedule_rebalance(self._clients())
            log.info("rebalanced %s: %s", service, outcome.message)
            return outcome

    def schedule_all(self) -> None:
        """Give every list its first rebalance time (after discovery ran once)."""
        for service in self._lists.services:
            lst = self._lists.get(service)
            if lst.next_rebalance is None:
                lst.schedule_rebalance(self._clients())

    async def run(self) -> None:
        while True:
            for service in self._lists.due_for_rebalance():
                try:
                    await self.rebalance(service)
                except Exception:
                    log.exception("rebalance of %s failed", service)
            await asyncio.sleep(TICK)

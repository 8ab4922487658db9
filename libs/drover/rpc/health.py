"""Liveness and readiness as the health service reports them.

Two questions, two names in ``grpc.health.v1.Health`` (Check and Watch):

* **liveness** (service name :data:`LIVENESS`): "the process works". SERVING
  from the moment the gRPC server runs; the answer itself is the proof (a
  wedged event loop answers nothing and the probe times out). It never
  depends on etcd or on other services: restarting a process cannot fix
  those, and restarting every replica at once during an etcd outage would
  make it worse.
* **readiness** (overall ``""`` and each drover service by its full proto
  name): "send me traffic". SERVING only when the app said it can serve
  (``set_ready``: the state cache loaded, the broker restored, the proxy
  has applied membership, ...) *and* every readiness check passes right now
  (:meth:`Health.add_check`: etcd reachable, the state cache caught up with
  etcd, a leader known). Checks run periodically (:meth:`Health.refresh`,
  driven by the server) and readiness follows them both ways. A
  leader-only service is ready on followers too: they answer with a leader
  hint, which is useful.

Graceful shutdown turns everything NOT_SERVING first so load balancers and
Kubernetes stop sending before the server drains.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from grpc_health.v1 import health, health_pb2

log = logging.getLogger(__name__)

OVERALL = ""
#: The health service name liveness probes ask for.
LIVENESS = "liveness"

#: A readiness check: None when satisfied, else why not (short, for logs).
Check = Callable[[], Awaitable[str | None]]

_STATUS = health_pb2.HealthCheckResponse


class Health:
    """Owner of the grpc.health.v1 servicer: liveness, per-service readiness."""

    def __init__(self, services: list[str], *, check_timeout: float = 2.0) -> None:
        self.servicer = health.aio.HealthServicer()
        self._services = list(services)
        self._ready: dict[str, bool] = {s: False for s in self._services}
        self._checks: dict[str, Check] = {}
        #: Unmet readiness checks by name, as of the last refresh.
        self.failing: dict[str, str] = {}
        self._published: dict[str, int] = {}
        self._check_timeout = check_timeout
        self._shutting_down = False

    async def init(self) -> None:
        await self._publish(LIVENESS, True)
        for name in [OVERALL, *self._services]:
            await self._publish(name, False)

    def add_check(self, name: str, check: Check) -> None:
        """Readiness also needs ``check`` to pass (see the module docstring)."""
        self._checks[name] = check

    async def set_ready(self, service: str, ready: bool = True) -> None:
        """The app says one drover service (full proto name) can serve, or not.
        The overall status is SERVING only when every service is."""
        self._ready[service] = ready
        await self._settle(ready)

    async def set_all_ready(self, ready: bool = True) -> None:
        for name in self._services:
            self._ready[name] = ready
        await self._settle(ready)

    async def _settle(self, ready: bool) -> None:
        # Becoming ready runs the checks first: SERVING is never published
        # on the app's word alone, to be withdrawn at the next refresh.
        if ready and self._checks:
            await self.refresh()
        else:
            await self._apply()

    def is_ready(self, service: str | None = None) -> bool:
        """What readiness reports now (the app's word and the last checks)."""
        if self.failing:
            return False
        if service is None:
            return all(self._ready.values())
        return self._ready.get(service, False)

    async def refresh(self) -> dict[str, str]:
        """Run every readiness check once and publish; the unmet ones."""
        failing: dict[str, str] = {}
        for name, check in list(self._checks.items()):
            try:
                # Not wait_for: on 3.11 it swallows a cancel that lands just as
                # the check finishes, and the readiness task (cancelled once, at
                # stop) would then run forever, hanging the server's stop.
                async with asyncio.timeout(self._check_timeout):
                    reason = await check()
            except TimeoutError:
                reason = f"no answer within {self._check_timeout:g}s"
            except Exception as e:  # a failing check means "not ready", never a crash
                reason = f"{type(e).__name__}: {e}"
            if reason is not None:
                failing[name] = reason
        if failing != self.failing:
            if failing:
                log.warning("not ready: %s",
                            "; ".join(f"{k}: {v}" for k, v in sorted(failing.items())))
            else:
                log.info("readiness checks pass again")
        self.failing = failing
        await self._apply()
        return failing

    async def _apply(self) -> None:
        ok = not self.failing
        for name in self._services:
            await self._publish(name, ok and self._ready[name])
        await self._publish(OVERALL, ok and all(self._ready.values()))

    async def _publish(self, name: str, serving: bool) -> None:
        if self._shutting_down:
            return
        status = _STATUS.SERVING if serving else _STATUS.NOT_SERVING
        if self._published.get(name) != status:
            self._published[name] = status
            await self.servicer.set(name, status)

    async def shutdown(self) -> None:
        self._shutting_down = True
        await self.servicer.enter_graceful_shutdown()

"""Readiness as the health service reports it.

Every drover server starts NOT_SERVING, overall ("") and per service, and a
service flips to SERVING only when it can really serve (the state cache has
caught up, the proxy has a server list, ...). A leader-only service is
SERVING on followers too: they answer with a leader hint, which is useful.
Graceful shutdown turns everything NOT_SERVING first so load balancers and
Kubernetes stop sending before the server drains.
"""

from __future__ import annotations

from grpc_health.v1 import health, health_pb2

OVERALL = ""


class Health:
    """Thin owner of the grpc.health.v1 servicer, with per-service readiness."""

    def __init__(self, services: list[str]) -> None:
        self.servicer = health.aio.HealthServicer()
        self._services = list(services)
        self._ready: dict[str, bool] = {s: False for s in self._services}
        self._shutting_down = False

    async def init(self) -> None:
        for name in [OVERALL, *self._services]:
            await self.servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)

    async def set_ready(self, service: str, ready: bool = True) -> None:
        """Mark one drover service (full proto name) ready or not; the overall
        status is SERVING only when every service is."""
        if self._shutting_down:
            return
        self._ready[service] = ready
        status = health_pb2.HealthCheckResponse
        await self.servicer.set(service, status.SERVING if ready else status.NOT_SERVING)
        overall = all(self._ready.values())
        await self.servicer.set(OVERALL, status.SERVING if overall else status.NOT_SERVING)

    async def set_all_ready(self, ready: bool = True) -> None:
        for name in self._services:
            await self.set_ready(name, ready)

    def is_ready(self, service: str | None = None) -> bool:
        if service is None:
            return all(self._ready.values())
        return self._ready.get(service, False)

    async def shutdown(self) -> None:
        self._shutting_down = True
        await self.servicer.enter_graceful_shutdown()

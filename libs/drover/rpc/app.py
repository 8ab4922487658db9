"""Finding and building service apps.

``libs/`` never imports ``services/``: the ``drover serve <name>`` command
finds a service's app factory through the ``drover.services`` entry-point
group declared in pyproject.toml (``state = "drover.state.app:create_app"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from drover.config import ServeSettings
from drover.rpc.server import App, AppContext, ServiceBinding

AppFactory = Callable[[ServeSettings], App]

GROUP = "drover.services"


def service_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=GROUP))


def load_app_factory(name: str) -> AppFactory:
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            factory: AppFactory = ep.load()
            return factory
    known = ", ".join(service_names()) or "none installed"
    raise LookupError(f"unknown service {name!r} (known: {known})")


class StaticApp:
    """An app whose servicers need nothing running: ready once serving."""

    def __init__(self, bindings: Sequence[ServiceBinding]) -> None:
        self.bindings = list(bindings)

    async def prepare(self) -> None:
        return None

    async def start(self, ctx: AppContext) -> None:
        await ctx.health.set_all_ready(True)

    async def stop(self) -> None:
        return None

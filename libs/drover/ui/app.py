"""Wiring of `drover ui`: the aiohttp application, its routes, and serving it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from aiohttp import web

from drover.ui.backend import Backend
from drover.ui.config import UiConfig
from drover.ui.handlers import Ui, with_token

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"


def create_app(cfg: UiConfig, backend: Backend | None = None) -> web.Application:
    """The UI as an aiohttp application talking to drover at ``cfg.address``."""
    ui = Ui(cfg, backend or Backend(cfg))
    app = web.Application(middlewares=[with_token])
    app.add_routes([
        web.get("/", ui.index),
        web.get("/ui", ui.index),
        web.get("/healthz", ui.healthz),
        web.get("/ui/jobs", ui.jobs_shell),
        web.get("/ui/jobs/{namespace}/{job}", ui.job_shell),
        web.get("/ui/evaluations", ui.evals_shell),
        web.get("/ui/nodes", ui.nodes_shell),
        web.get("/ui/f/jobs", ui.jobs),
        web.get("/ui/f/jobs/{namespace}/{job}", ui.job),
        web.get("/ui/f/evaluations", ui.evaluations),
        web.get("/ui/f/nodes", ui.nodes),
        web.get("/ui/f/whoami", ui.whoami),
        web.get("/ui/events", ui.events),
        web.post("/ui/actions/{action}", ui.action),
        web.static("/ui/static", STATIC),
    ])

    async def close(_: web.Application) -> None:
        await ui.backend.close()

    app.on_cleanup.append(close)
    return app


async def serve(cfg: UiConfig, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    runner = web.AppRunner(create_app(cfg), access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    host, port = cfg.host_port
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("drover ui on http://%s:%d/ui (drover at %s)", host, port, cfg.address)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()

"""`drover ui`: serve the web UI (:mod:`drover.ui`), a client of the proxy."""

from __future__ import annotations

import asyncio
import logging
import signal

import click

from drover.cli.client import DEFAULT_ADDRESS
from drover.config import TlsFiles
from drover.tasks import run
from drover.ui.config import DEFAULT_LISTEN, UiConfig


@click.command(name="ui")
@click.option("--listen", envvar="DROVER_UI_LISTEN", default=DEFAULT_LISTEN, show_default=True,
              help="host:port to serve the web UI on (Nomad's port)")
@click.option("--address", envvar="DROVER_ADDR", default=DEFAULT_ADDRESS, show_default=True,
              help="drover server (the proxy); several, comma-separated, fail over")
@click.option("--tls-ca", envvar="DROVER_TLS_CA", default="", help="CA of the servers (TLS)")
@click.option("--tls-cert", envvar="DROVER_TLS_CERT", default="", help="client certificate (mTLS)")
@click.option("--tls-key", envvar="DROVER_TLS_KEY", default="", help="client key (mTLS)")
def ui(listen: str, address: str, tls_ca: str, tls_cert: str, tls_key: str) -> None:
    """Serve the web UI: jobs, deployments, evaluations and nodes, live.

    Each user's ACL token is entered in the browser and sent with every call;
    the UI holds none of its own."""
    from drover.ui.app import serve

    logging.basicConfig(level=logging.INFO, format="ui %(levelname)s %(message)s")
    cfg = UiConfig(listen=listen, address=address,
                   tls=TlsFiles(ca=tls_ca, cert=tls_cert, key=tls_key))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        click.echo(f"ui: http://{listen}/ui (drover at {address})")
        await serve(cfg, stop)

    run(main(), stop_timeout=3.0)

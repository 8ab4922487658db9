"""Drover services as real subprocesses (``drover serve``), for the system tests.

Importable by its bare name from any test module (pytest puts ``tests/`` on
``sys.path``), and so by mypy too: it lived in tests/system/conftest.py,
which a type checker cannot tell apart from tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

from drover.dev.ports import free_port, wait_for_port


@contextlib.contextmanager
def serve(service: str, etcd: str, prefix: str, *extra: str,
          env: dict[str, str] | None = None,
          launcher: tuple[str, ...] = ("drover.cli.main",)) -> Iterator[str]:
    """`drover serve <service>` on a free port; its address. ``env``: added
    to this process's environment for it; ``launcher``: the module (and its
    arguments) run with ``python -m`` in place of drover's CLI."""
    with serve_process(service, etcd, prefix, *extra, env=env,
                       launcher=launcher) as (address, _):
        yield address


@contextlib.contextmanager
def serve_process(service: str, etcd: str, prefix: str, *extra: str,
                  env: dict[str, str] | None = None,
                  launcher: tuple[str, ...] = ("drover.cli.main",),
                  ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`drover serve <service>` on a free port; its address and process."""
    port = free_port()
    proc = subprocess.Popen([
        sys.executable, "-m", *launcher, "serve", service, "--etcd", etcd,
        "--etcd-prefix", prefix, "--listen", f"127.0.0.1:{port}", "--session-ttl", "3",
        "--log-level", "WARNING", *extra,
    ], env={**os.environ, **env} if env else None)
    try:
        assert wait_for_port("127.0.0.1", port, 30), f"{service} did not start"
        yield f"127.0.0.1:{port}", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(10)

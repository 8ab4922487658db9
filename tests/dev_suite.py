"""A `drover dev` suite for the system tests that drive it as a user would.

One helper for the idea "start the dev cluster on free ports and wait until
it places work": the proxy listens and every simulated node is listed. The
suite's output goes to ``dev.log`` in the directory given (kept for a failed
test), and it is stopped with SIGTERM (its own bounded stop) at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from drover.dev.ports import wait_for_port
from drover.dev.supervisor import free_layout


@contextlib.contextmanager
def dev_suite(log_dir: Path, nodes: int, *extra: str) -> Iterator[dict[str, str]]:
    """`drover dev --nodes N` on free ports, ready; the environment for CLI calls."""
    offset, lay = free_layout()
    log = (log_dir / "dev.log").open("w")
    env = {**os.environ, "DROVER_ADDR": lay.address("proxy")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset),
         "--nodes", str(nodes), *extra], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        assert wait_for_port(lay.host, lay.proxy, 60), "the dev suite did not start"
        deadline = time.monotonic() + 60
        while len(_nodes(env)) < nodes:
            assert time.monotonic() < deadline, f"{nodes} simulated nodes not listed in 60 s"
            time.sleep(0.3)
        yield env
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
        log.close()


def _nodes(env: dict[str, str]) -> list[object]:
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", "node", "list", "--json"],
                         env=env, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        return []
    try:
        listed = json.loads(out.stdout)
    except json.JSONDecodeError:
        return []
    return listed if isinstance(listed, list) else []

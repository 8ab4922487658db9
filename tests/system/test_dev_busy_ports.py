"""A second `drover dev` on busy ports says which port is taken and starts
nothing (it used to announce "drover is up" against someone else's etcd)."""

from __future__ import annotations

import socket
import subprocess
import sys

from drover.dev.supervisor import free_layout


def test_a_busy_port_is_named_and_nothing_starts() -> None:
    offset, lay = free_layout()
    with socket.socket() as taken:
        taken.bind((lay.host, lay.broker))
        taken.listen()
        run = subprocess.run(
            [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset)],
            capture_output=True, text=True, timeout=60, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert f"{lay.broker} (broker)" in out and "--port-offset" in out, out
    assert "drover is up" not in out and "Traceback" not in out, out
    assert "etcd " not in run.stdout  # etcd was not started

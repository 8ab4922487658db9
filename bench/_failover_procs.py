"""Candidate processes for bench/failover.py (``drover.coord._demo_candidate``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Candidate:
    """One demo candidate; remembers when (monotonic) it last established/revoked."""

    def __init__(self, endpoint: str, prefix: str, name: str, ttl: int) -> None:
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'libs'}{os.pathsep}"
                   f"{os.environ.get('PYTHONPATH', '')}")
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "drover.coord._demo_candidate", "--endpoint", endpoint,
             "--prefix", prefix, "--name", name, "--ttl", str(ttl), "--write-interval", "0.5"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        self.ready = threading.Event()
        self.established_at: float | None = None
        self.revoked_at: float | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)["event"]
            except (ValueError, KeyError):
                continue
            now = time.monotonic()
            if event == "ready":
                self.ready.set()
            elif event == "establish":
                self.established_at = now
            elif event == "revoke":
                self.revoked_at = now

    @property
    def leading(self) -> bool:
        return self.established_at is not None and (
            self.revoked_at is None or self.revoked_at < self.established_at)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)

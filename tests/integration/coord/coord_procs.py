"""Demo candidates as subprocesses, with their JSON-line reports collected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


class Candidate:
    def __init__(self, endpoint: str, prefix: str, name: str, *, ttl: int = 1,
                 extra: tuple[str, ...] = ()) -> None:
        env = dict(os.environ, PYTHONPATH=f"{ROOT / 'libs'}{os.pathsep}"
                   f"{os.environ.get('PYTHONPATH', '')}")
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "drover.coord._demo_candidate", "--endpoint", endpoint,
             "--prefix", prefix, "--name", name, "--ttl", str(ttl), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            ev["seen"] = time.monotonic()
            with self._lock:
                self.events.append(ev)

    def find(self, event: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["event"] == event]

    def wait_for(self, event: str, timeout: float,
                 where: Callable[[dict[str, Any]], bool] = lambda e: True) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hits = [e for e in self.find(event) if where(e)]
            if hits:
                return hits[0]
            time.sleep(0.01)
        raise AssertionError(f"{self.name}: no {event!r} within {timeout}s: {self.events}")

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(5)

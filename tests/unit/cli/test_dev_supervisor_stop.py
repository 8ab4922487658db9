"""`drover dev`'s stop is bounded by its deadline, not by its children: one
that ignores SIGTERM is killed when the deadline passes."""

from __future__ import annotations

import signal
import subprocess
import sys

from drover.dev.supervisor import Supervisor

STUBBORN = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
POLITE = "import sys, time\nprint('ready', flush=True)\ntime.sleep(60)\n"


def _child(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_a_child_that_ignores_sigterm_is_killed_at_the_deadline() -> None:
    stubborn, polite = _child(STUBBORN), _child(POLITE)
    sup = Supervisor(stop_timeout=0.5, log=lambda _: None)
    sup.children.update(stubborn=stubborn, polite=polite)
    try:
        sup.stop()
        assert polite.returncode == -signal.SIGTERM  # asked, and it went
        assert stubborn.returncode == -signal.SIGKILL  # asked, ignored it, killed
        assert sup.children == {}
    finally:
        for proc in (stubborn, polite):
            if proc.poll() is None:
                proc.kill()
                proc.wait()

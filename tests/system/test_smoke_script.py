"""`make run` then `make smoke`, as CI runs it: scripts/smoke.sh (buf curl +
jq) against a whole `drover dev` suite, through the proxy and directly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from test_dev_suite import _offset_with_free_ports

from drover.dev.supervisor import SERVICES

ROOT = Path(__file__).resolve().parents[2]


def test_smoke_script_passes_against_the_dev_suite() -> None:
    assert shutil.which("jq"), "jq is required (Debian jq)"
    offset, lay = _offset_with_free_ports()
    suite = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert suite.stdout is not None
        for line in suite.stdout:
            if "drover is up" in line:
                break
        else:
            raise AssertionError("the dev suite did not come up")
        env = {
            **os.environ,
            "DROVER_PROXY": lay.address("proxy"),
            "DROVER_STATE": lay.address("state"),
            "DROVER_BROKER": lay.address("broker"),
            "DROVER_DEPLOYMENTS": lay.address("deployments"),
        }
        smoke = subprocess.run(["bash", str(ROOT / "scripts" / "smoke.sh")], env=env,
                               capture_output=True, text=True, timeout=240, check=False)
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
        assert smoke.stdout.strip().endswith("passed, 0 failed"), smoke.stdout
        assert len(SERVICES) == 4
    finally:
        suite.send_signal(signal.SIGTERM)
        try:
            suite.wait(10)
        except subprocess.TimeoutExpired:
            suite.kill()
            suite.wait()

"""`--address`/`DROVER_ADDR` with several servers: the CLI uses one that
works, whichever order it tries them in (a real `drover serve state` and an
address nobody listens on)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from drover.dev.ports import free_port

pytestmark = pytest.mark.slow


def test_the_cli_uses_a_live_address_of_several(state_address: str) -> None:
    dead = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "DROVER_ADDR": f"{dead},{state_address}"}
    for _ in range(3):  # random order: both orders are likely among three runs
        out = subprocess.run([sys.executable, "-m", "drover.cli.main", "eval", "list",
                              "--json"], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == []
    out = subprocess.run([sys.executable, "-m", "drover.cli.main", "eval", "list",
                          "--address", f"{dead},127.0.0.1:{free_port()}",
                          "--timeout", "5"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and "cannot reach drover" in out.stderr, out.stderr

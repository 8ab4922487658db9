"""The README's first screen, run verbatim as a newcomer runs it: its
commands (between the ``first-screen`` markers) in one shell against a real
`drover dev` (`make run`'s suite, on free ports here: ``DROVER_ADDR``), from
the repository's root. Each must succeed (the plan's exit 1 is handled by the
README's own ``||``), the canary rollout must end successful, and every line
fits 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from dev_suite import dev_suite

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def first_screen() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- first-screen -->\n```sh\n(.*?)```\n<!-- /first-screen -->",
                      text, re.S)
    assert block is not None, "README.md lost its first-screen markers"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_first_screen_is_ten_lines_or_fewer() -> None:
    head = (ROOT / "README.md").read_text().splitlines()
    assert head[2:6] == ["```sh", head[3], head[4], "```"] and head[3].startswith("make run ")
    assert head[4].startswith("make test ")
    assert 0 < len(first_screen()) <= 10


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with dev_suite(tmp_path_factory.mktemp("dev"), nodes=3) as env:
        yield env


def test_the_first_screen_runs_as_written(suite: dict[str, str]) -> None:
    script = "set -e\n" + "\n".join(first_screen()) + "\n"
    env = {**suite, "COLUMNS": "80", "PATH": os.environ.get("PATH", "")}
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "Error" not in out.stderr, out.stderr
    assert "plan exit 1" in out.stdout, out.stdout
    assert out.stdout.count("Deployment completed successfully") >= 2, out.stdout
    too_wide = [line for line in out.stdout.splitlines() if len(line) > 80]
    assert not too_wide, too_wide

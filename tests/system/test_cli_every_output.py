"""Every command's output on a real `drover dev`, table-driven: at
``COLUMNS=80`` no line is wider than 80 and none ends in a space; with
``--json`` the output is one JSON document, or (a watch) one JSON object per
line. The dev log of a normal start shows no refused connection and no
AioRpcError repr (issue 40, items 10, 12 and 13)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dev_suite import dev_suite

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EX = str(ROOT / "examples")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    logs = tmp_path_factory.mktemp("dev")
    with dev_suite(logs, nodes=3) as env:
        ran = _drover(env, "job", "run", f"{EX}/canary.yaml")  # monitored: until deployed
        assert ran.returncode == 0, ran.stdout + ran.stderr
        ids = {k: json.loads(_drover(env, *args, "--json").stdout)[0][field]
               for k, args, field in (("alloc", ("alloc", "list"), "id"),
                                      ("deployment", ("deployment", "list"), "id"),
                                      ("eval", ("eval", "list"), "id"))}
        yield {"env": env, "ids": ids, "log": logs / "dev.log"}


def _drover(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args],
                          env={**env, "COLUMNS": "80"}, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


#: (command, exit codes it may end with). ``{alloc}`` etc. are ids of the suite.
COMMANDS: list[tuple[str, tuple[int, ...]]] = [
    ("job list", (0,)), ("job status", (0,)), ("job status web", (0,)),
    ("job status web --watch", (0,)), ("job allocs web", (0,)), ("job inspect web", (0,)),
    ("job history web", (0,)), ("job history web --diff", (0,)),
    (f"job plan {EX}/canary-v2.yaml", (1,)), (f"job validate {EX}/canary.yaml", (0,)),
    ("eval list", (0,)), ("eval count", (0,)), ("eval status {eval}", (0,)),
    ("deployment list", (0,)), ("deployment status {deployment}", (0,)),
    ("deployment status {deployment} --monitor", (0,)),
    ("node list", (0,)), ("node status sim-0", (0,)),
    ("alloc list", (0,)), ("alloc list --job web", (0,)), ("alloc status {alloc}", (0,)),
    ("broker stats", (0,)), ("broker queue", (0,)),
    ("operator members", (0,)), ("operator scheduler get-config", (0,)),
    ("node eligibility sim-2 --disable", (0,)), ("node eligibility sim-2 --enable", (0,)),
    ("job scale web frontend 3", (0,)), ("system gc", (0,)),
]


@pytest.mark.parametrize(("command", "codes"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_fits_80_columns_and_json_parses(suite: dict[str, Any], command: str,
                                        codes: tuple[int, ...]) -> None:
    args = command.format(**suite["ids"]).split()
    plain = _drover(suite["env"], *args)
    assert plain.returncode in codes, plain.stdout + plain.stderr
    assert plain.stdout.strip(), f"{command}: printed nothing"
    lines = plain.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [ln for ln in lines if len(ln) > 80]
    assert not [ln for ln in lines if ln != ln.rstrip()], f"{command}: trailing spaces"
    assert "True" not in plain.stdout.split() and "False" not in plain.stdout.split()
    as_json = _drover(suite["env"], *args, "--json")
    assert as_json.returncode in codes, as_json.stdout + as_json.stderr
    try:
        json.loads(as_json.stdout)
    except json.JSONDecodeError:  # a watch: one object per line
        objects = [json.loads(line) for line in as_json.stdout.splitlines()]
        assert objects and all(isinstance(o, dict) for o in objects), as_json.stdout


def test_the_dev_log_of_a_normal_start_is_quiet(suite: dict[str, Any]) -> None:
    text = Path(suite["log"]).read_text()
    assert "Connection refused" not in text and "AioRpcError" not in text, text
    assert "Traceback" not in text, text

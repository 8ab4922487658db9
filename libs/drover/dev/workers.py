"""The scheduler workers `drover dev` can run: the command line of each.

``python`` is the reference worker (`drover worker`); ``typescript`` is the
port in ``workers/typescript`` (built by ``make ts-worker``), run by node
with the same flags. Both are clients of the proxy like any other worker.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

WORKERS = ("python", "typescript")

#: The TypeScript worker's entry point, built from workers/typescript.
TS_MAIN = Path(__file__).resolve().parents[3] / "workers/typescript/dist/src/main.js"


class WorkerNotBuilt(RuntimeError):
    pass


def worker_program(kind: str) -> tuple[str, ...]:
    """The command that runs a ``kind`` worker, before its flags (the same
    flags for every kind: `drover worker --help`)."""
    if kind == "python":
        return (sys.executable, "-m", "drover.cli.main", "worker")
    if kind != "typescript":
        raise ValueError(f"no worker {kind!r}: one of {', '.join(WORKERS)}")
    node = shutil.which("node")
    if node is None or not TS_MAIN.is_file():
        raise WorkerNotBuilt(f"the TypeScript worker is not built ({TS_MAIN} missing"
                             f"{'' if node else ', node not on PATH'}): run `make ts-worker`")
    return (node, str(TS_MAIN))


def worker_command(kind: str, address: str, max_txn_ops: int) -> tuple[str, ...]:
    """The command that runs a ``kind`` worker against ``address``."""
    return (*worker_program(kind), "--address", address, "--max-txn-ops", str(max_txn_ops))

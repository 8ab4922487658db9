"""`drover dev --worker`: the command line of each scheduler worker."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from drover.dev import workers
from drover.dev.workers import WorkerNotBuilt, worker_command


def test_the_python_worker_is_drover_worker_with_the_dev_flags() -> None:
    assert worker_command("python", "127.0.0.1:7100", 1024) == (
        sys.executable, "-m", "drover.cli.main", "worker",
        "--address", "127.0.0.1:7100", "--max-txn-ops", "1024")


def test_the_typescript_worker_runs_its_build_with_node(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    main = tmp_path / "main.js"
    main.write_text("")
    monkeypatch.setattr(workers, "TS_MAIN", main)
    monkeypatch.setattr(workers.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert worker_command("typescript", "a:1", 128) == (
        "/usr/bin/node", str(main), "--address", "a:1", "--max-txn-ops", "128")


def test_an_unbuilt_typescript_worker_says_how_to_build_it(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "TS_MAIN", tmp_path / "missing.js")
    with pytest.raises(WorkerNotBuilt, match="make ts-worker"):
        worker_command("typescript", "a:1", 128)


def test_an_unknown_worker_is_refused() -> None:
    with pytest.raises(ValueError, match="one of python, typescript"):
        worker_command("go", "a:1", 128)


def test_the_typescript_entry_point_is_in_this_tree() -> None:
    assert workers.TS_MAIN.parent.parent.parent == Path(__file__).resolve().parents[3] / \
        "workers" / "typescript"

"""The committed generated code matches protos/ (else: run `make proto`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_not_stale() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "genproto.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_stale_check_detects_an_edit(tmp_path: Path) -> None:
    # The check itself must be able to fail: compare a tree with one byte changed.
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import genproto
    finally:
        sys.path.pop(0)
    fresh = tmp_path / "fresh"
    genproto.generate(fresh)
    edited = tmp_path / "edited"
    genproto.generate(edited)
    target = edited / "types" / "v1" / "job_pb2.py"
    target.write_text(target.read_text() + "\n# edited\n")
    assert genproto._same_tree(edited, fresh) == ["differs: types/v1/job_pb2.py"]
    (fresh / "types" / "v1" / "extra_pb2.py").write_text("")
    assert "missing: types/v1/extra_pb2.py" in genproto._same_tree(edited, fresh)

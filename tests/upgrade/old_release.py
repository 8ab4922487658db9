"""The previous release, runnable: its own source tree and venv in a temp dir.

The release is the newest released entry of releases.toml (scripts/releases.py
resolves it to its tag, or its commit in a clone without the tag). Its tree is
``git archive``d (no worktree bookkeeping left in the repository) and installed
into a venv of its own with its own constraints: pip reuses the wheels of its
cache and the local index, ~20 s on a warm machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import releases  # noqa: E402

#: How long installing the previous release may take (pip on a loaded box).
INSTALL_TIMEOUT = 300.0


@dataclass(frozen=True)
class Installed:
    """One version of drover ready to run: its interpreter and its tree."""

    version: str
    python: str
    tree: Path


#: Start from this git ref instead of the previous release (a commit or tag
#: of this clone: to try an upgrade from an older one by hand).
FROM_ENV = "UPGRADE_FROM_REF"


def previous_release() -> releases.Release:
    """The previous release, or the ref ``$UPGRADE_FROM_REF`` names."""
    ref = os.environ.get(FROM_ENV, "")
    if not ref:
        return releases.previous(releases.load())
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{FROM_ENV}={ref}: not a commit of this clone")
    return releases.Release(version=ref, status="released", commit=done.stdout.strip())


def current_release() -> releases.Release:
    return releases.current(releases.load())


def install(release: releases.Release, into: Path) -> Installed:
    """``release``'s tree under ``into/src`` and its venv under ``into/venv``."""
    ref = releases.resolve(release, ROOT)
    src, venv = into / "src", into / "venv"
    src.mkdir(parents=True)
    with tempfile.TemporaryFile() as tar:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref],
                       stdout=tar, check=True, timeout=60)
        tar.seek(0)
        with tarfile.open(fileobj=tar) as t:
            t.extractall(src, filter="data")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    done = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "-c", str(src / "constraints.txt"), str(src)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    if done.returncode != 0:
        errors = [ln for ln in done.stderr.splitlines() if not ln.startswith("WARNING:")]
        raise RuntimeError(f"installing drover {release.version} ({ref}) failed: "
                           + "\n".join(errors[-20:]))
    return Installed(release.version, python, src)


def this_tree() -> Installed:
    """The working tree, run by the interpreter running the tests."""
    return Installed(current_release().version, sys.executable, ROOT)

"""releases.toml and scripts/releases.py: the previous release is found in any
clone (its tag, else its commit), refused clearly when the clone has neither
or the tag moved, and the package version agrees with the newest entry."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
try:
    import releases
finally:
    sys.path.pop(0)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """A repository of two commits; v0.1.0 tags the first: (path, first, second)."""
    git(tmp_path, "init", "-q")
    ident = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")
    for msg in ("one", "two"):
        (tmp_path / "f").write_text(msg)
        git(tmp_path, "add", "f")
        git(tmp_path, *ident, "commit", "-q", "-m", msg)
    first, second = git(tmp_path, "rev-parse", "HEAD~1"), git(tmp_path, "rev-parse", "HEAD")
    git(tmp_path, *ident, "tag", "-a", "v0.1.0", "-m", "0.1.0", first)
    yield tmp_path, first, second


def release(commit: str) -> releases.Release:
    return releases.Release(version="0.1.0", status="released", tag="v0.1.0", commit=commit)


def test_the_tag_when_the_clone_has_it(repo: tuple[Path, str, str]) -> None:
    path, first, _ = repo
    assert releases.resolve(release(first), path) == "refs/tags/v0.1.0"


def test_the_commit_when_the_tag_is_missing(repo: tuple[Path, str, str]) -> None:
    path, first, _ = repo
    git(path, "tag", "-d", "v0.1.0")
    assert releases.resolve(release(first), path) == first


def test_neither_tag_nor_commit_says_what_to_fetch(repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    git(path, "tag", "-d", "v0.1.0")
    with pytest.raises(releases.ReleaseMissing, match="git fetch --tags"):
        releases.resolve(release("0" * 40), path)


def test_a_moved_tag_is_refused(repo: tuple[Path, str, str]) -> None:
    path, _, second = repo
    with pytest.raises(releases.ReleaseMissing, match="fix the tag or the file"):
        releases.resolve(release(second), path)


def test_this_repositorys_releases_agree() -> None:
    entries = releases.load()
    assert releases.current(entries).version == releases.pyproject_version()
    prev = releases.previous(entries)
    assert prev.tag == f"v{prev.version}" and len(prev.commit) == 40
    versions = [tuple(int(x) for x in r.version.split(".")) for r in entries]
    assert versions == sorted(versions, reverse=True), "releases.toml lists newest first"
    assert prev.version in releases.current(entries).upgrade_from


def test_ref_exits_2_with_one_line_when_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    git(tmp_path, "init", "-q")  # a clone holding neither the tag nor the commit
    monkeypatch.setattr(releases, "ROOT", tmp_path)
    assert releases.main(["ref"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("releases: the previous release") and err.count("\n") == 1

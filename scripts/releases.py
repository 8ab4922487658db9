"""drover's releases (releases.toml): which one is the previous, and where it is.

``python scripts/releases.py ref`` prints the git ref of the newest released
entry: its tag when the clone has it, else its commit when the clone holds
that (a clone made without tags), else it exits 2 saying what to fetch.
`make lint` runs `buf breaking` against that ref; the rolling-upgrade test
(tests/upgrade/) starts the same release. ``version`` prints the version the
working tree is (the newest entry, released or not), which pyproject.toml's
must equal (``check``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ROOT / "releases.toml"


class ReleaseMissing(RuntimeError):
    """Neither the previous release's tag nor its commit is in this clone."""


@dataclass(frozen=True)
class Release:
    version: str
    status: str
    tag: str = ""
    commit: str = ""
    date: str = ""
    proto: str = ""
    rpc_version: int = 0
    upgrade_from: tuple[str, ...] = ()
    downgrade_to: tuple[str, ...] = ()

    @property
    def released(self) -> bool:
        return self.status == "released"


def load(path: Path = RELEASES) -> list[Release]:
    """Every entry, newest first (as the file lists them)."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = []
    for d in data.get("release", []):
        d = dict(d)
        for key in ("upgrade_from", "downgrade_to"):
            d[key] = tuple(d.get(key, ()))
        out.append(Release(**d))
    if not out:
        raise ValueError(f"{path}: no [[release]] entries")
    return out


def current(releases: list[Release]) -> Release:
    """What the working tree is: the newest entry."""
    return releases[0]


def previous(releases: list[Release]) -> Release:
    """The newest released entry (the one upgrades start from)."""
    for r in releases:
        if r.released:
            if not r.tag or not r.commit:
                raise ValueError(f"releases.toml: release {r.version} needs a tag and a commit")
            return r
    raise ValueError("releases.toml: no released entry")


def _git_commit(ref: str, root: Path) -> str | None:
    """The commit ``ref`` names in the clone at ``root``, if it holds it."""
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet",
                           f"{ref}^{{commit}}"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def resolve(release: Release, root: Path = ROOT) -> str:
    """The git ref of ``release`` in the clone at ``root``: its tag, or its
    commit when the tag is missing. A tag naming another commit than the
    recorded one is refused (a moved tag is not the release)."""
    tagged = _git_commit(f"refs/tags/{release.tag}", root)
    if tagged is not None:
        if tagged != release.commit:
            raise ReleaseMissing(
                f"tag {release.tag} names {tagged[:12]}, releases.toml records "
                f"{release.commit[:12]} for {release.version}: fix the tag or the file")
        return f"refs/tags/{release.tag}"
    if _git_commit(release.commit, root) is not None:
        return release.commit
    raise ReleaseMissing(
        f"the previous release {release.version} is not in this clone (no tag "
        f"{release.tag}, no commit {release.commit[:12]}): run `git fetch --tags origin` "
        "(or clone without --depth) and retry")


def pyproject_version(root: Path = ROOT) -> str:
    with open(root / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("ref", "version", "previous", "check"))
    args = parser.parse_args(argv)
    releases = load()
    if args.what == "version":
        print(current(releases).version)
    elif args.what == "previous":
        print(previous(releases).version)
    elif args.what == "check":
        want, have = current(releases).version, pyproject_version()
        if want != have:
            print(f"pyproject.toml says version {have}, releases.toml's newest entry is "
                  f"{want}: make them agree", file=sys.stderr)
            return 1
    else:
        try:
            print(resolve(previous(releases), ROOT))
        except ReleaseMissing as e:
            print(f"releases: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""docs/acl.md lists every RPC with its capability, exactly as the ACL table
says (regenerate: ``.venv/bin/python -m drover.acl.readme docs/acl.md``)."""

from __future__ import annotations

from pathlib import Path

from drover.acl.readme import current, render
from drover.acl.table import TABLE

README = Path(__file__).resolve().parents[3] / "docs" / "acl.md"


def test_the_readme_table_is_the_acl_table() -> None:
    block = current(README.read_text())
    assert block is not None, "docs/acl.md lost its RPC access table"
    assert block == render(), (
        "docs/acl.md's RPC table drifted from libs/drover/acl/table.py: run "
        "`.venv/bin/python -m drover.acl.readme docs/acl.md`")
    for method in TABLE:  # every RPC, by name
        assert f"/{method.rsplit('/', 1)[1]}`" in block


def test_a_drifted_readme_is_caught() -> None:
    block = render()
    drifted = block.replace("`submit-job`", "`deployment-write`", 1)
    assert drifted != block and current(f"x\n{drifted}\ny") != render()

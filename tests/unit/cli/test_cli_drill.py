"""`drover drill partition` refuses clearly where it cannot run."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from drover.cli.main import cli
from drover.dev import netns, partition_drill
from drover.dev.partition_drill import PartitionConfig


def test_without_root_or_nft_the_drill_says_why_and_starts_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns, "available", lambda: "`nft` is not installed")
    monkeypatch.setattr(netns, "Net", lambda: pytest.fail("the drill started a network"))
    result = CliRunner().invoke(cli, ["drill", "partition", "--seconds", "1"])
    assert result.exit_code == 1
    assert "`nft` is not installed" in result.output and "needs root" in result.output


def test_the_drill_config_is_checked() -> None:
    with pytest.raises(ValueError, match="target"):
        PartitionConfig(target="proxy")
    assert partition_drill.TARGETS == ("broker-leader", "state")

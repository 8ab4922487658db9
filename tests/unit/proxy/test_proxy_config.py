"""Backup servers from config: parsing and the errors it names."""

from __future__ import annotations

import pytest

from drover.proxy.config import parse_backup_servers
from drover.proxy.errors import InvalidBackupServer


def test_parse_backup_servers() -> None:
    parsed = parse_backup_servers(["state=10.0.0.1:4650", " broker = h:1 ", "state=h:2"])
    assert parsed == {"state": ("10.0.0.1:4650", "h:2"), "broker": ("h:1",)}
    assert parse_backup_servers([]) == {}


@pytest.mark.parametrize("entry", ["10.0.0.1:4650", "state=", "state=host", "=h:1",
                                   "state=h:port", "nope=h:1"])
def test_parse_backup_servers_rejects(entry: str) -> None:
    with pytest.raises(InvalidBackupServer) as caught:
        parse_backup_servers([entry])
    assert caught.value.reason == "INVALID_BACKUP_SERVER"

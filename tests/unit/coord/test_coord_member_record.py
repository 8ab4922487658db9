from __future__ import annotations

import pytest

from drover.coord.connect import channel_target
from drover.coord.errors import InvalidMember
from drover.coord.membership import Member


def test_member_json_round_trip() -> None:
    m = Member("state", "r1", "10.0.0.1:7000", 1, applied_revision=42, started_at=1.5)
    assert Member.from_json(m.to_json()) == m


@pytest.mark.parametrize("raw", [b"", b"{", b"[]", b'{"service":"s"}',
                                 b'{"service":"s","replica":"r","address":"a",'
                                 b'"rpc_version":"x"}'])
def test_member_rejects_garbage(raw: bytes) -> None:
    with pytest.raises(InvalidMember) as e:
        Member.from_json(raw)
    assert e.value.reason == "INVALID_MEMBER"


def test_channel_target() -> None:
    assert channel_target(("127.0.0.1:2379",)) == "127.0.0.1:2379"
    assert channel_target(("10.0.0.1:2379", "10.0.0.2:2379")) == "ipv4:10.0.0.1:2379,10.0.0.2:2379"
    assert channel_target(("etcd-0:2379", "etcd-1:2379")) == "etcd-0:2379"
    with pytest.raises(ValueError):
        channel_target(())

from __future__ import annotations

import pytest

from drover.coord.connect import resolve_endpoints, split_endpoint
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


def test_split_endpoint() -> None:
    assert split_endpoint("127.0.0.1:2379") == ("127.0.0.1", 2379)
    assert split_endpoint("[::1]:2379") == ("::1", 2379)
    assert split_endpoint("etcd-0.etcd:2379") == ("etcd-0.etcd", 2379)
    for bad in ("::1:2379", "etcd", "etcd:x", "[::1:2379", ":2379"):
        with pytest.raises(ValueError):
            split_endpoint(bad)


async def test_resolve_endpoints_literals_and_names() -> None:
    got = await resolve_endpoints(("10.0.0.1:2379", "[::1]:2380", "localhost:2381"))
    assert got[0] == ("10.0.0.1:2379", "ipv4:10.0.0.1:2379", "10.0.0.1")
    assert got[1] == ("[::1]:2380", "ipv6:[::1]:2380", "::1")
    # A hostname becomes one endpoint per address it resolves to.
    names = [name for name, _, _ in got[2:]]
    assert names and all(n.startswith("localhost@") and n.endswith(":2381") for n in names)
    assert all(host == "localhost" for _, _, host in got[2:])
    with pytest.raises(ValueError):
        await resolve_endpoints(())

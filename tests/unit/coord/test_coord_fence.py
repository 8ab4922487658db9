from __future__ import annotations

from typing import Any

import pytest
from aetcd import rpc, rtypes

from drover.coord.errors import FenceLost, InvalidFence
from drover.coord.fence import (
    FENCE_METADATA,
    Fence,
    fence_compare,
    fence_compare_pb,
    fenced_txn,
    parse_fence,
)
from drover.coord.term import Term

KEY = "/drover/v1/election/broker/694d7a1b2c"


def test_header_round_trip() -> None:
    f = Fence(KEY, 42)
    assert f.header() == f"{KEY}@42"
    assert parse_fence(f.header()) == f
    assert f.metadata() == ((FENCE_METADATA, f"{KEY}@42"),)


@pytest.mark.parametrize(
    "value",
    ["", "nokey", f"{KEY}@", "@12", f"{KEY}@-3", f"{KEY}@0", f"{KEY}@012", f"{KEY}@1x",
     "relative/key@3", "/" + "a" * 2000 + "@1"],
)
def test_parse_rejects_malformed(value: str) -> None:
    with pytest.raises(InvalidFence) as e:
        parse_fence(value)
    assert e.value.reason == "INVALID_FENCE"


def test_fence_validates_fields() -> None:
    with pytest.raises(InvalidFence):
        Fence(KEY, 0)
    with pytest.raises(InvalidFence):
        Fence("no-slash", 3)


def test_compares_build_create_revision_equal() -> None:
    msg = fence_compare(Fence(KEY, 7)).build_message()
    pb = fence_compare_pb(Fence(KEY, 7))
    for m in (msg, pb):
        assert m.key == KEY.encode()
        assert m.target == rpc.Compare.CREATE and m.result == rpc.Compare.EQUAL
        assert m.create_revision == 7


def _get(create_revision: int) -> list[tuple[bytes, rtypes.Get]]:
    kv = rpc.KeyValue(key=KEY.encode(), value=b"addr", create_revision=create_revision)
    return [(b"addr", rtypes.Get(rpc.ResponseHeader(revision=99), kv))]


class FakeTxn:
    def __init__(self, ok: bool, failure_responses: list[Any]) -> None:
        self.ok = ok
        self.failure_responses = failure_responses
        self.calls: list[tuple[list[Any], list[Any], list[Any]]] = []

    async def transaction(self, compare: list[Any], success: list[Any] | None = None,
                          failure: list[Any] | None = None) -> tuple[bool, list[Any]]:
        self.calls.append((compare, success or [], failure or []))
        return (True, ["put-ok"]) if self.ok else (False, self.failure_responses)


async def test_fenced_txn_adds_the_fence_and_passes_success() -> None:
    client = FakeTxn(True, [])
    ok, resp = await fenced_txn(client, Fence(KEY, 7), success=["op"])
    assert ok and resp == ["put-ok"]
    compare, success, failure = client.calls[0]
    assert compare[-1].build_message().create_revision == 7 and success == ["op"]
    assert failure[-1].key == KEY.encode()


async def test_own_compare_failure_is_not_a_fence_loss() -> None:
    client = FakeTxn(False, ["caller-get", _get(7)])
    ok, resp = await fenced_txn(client, Fence(KEY, 7), compare=["c"], failure=["g"])
    assert not ok and resp == ["caller-get"]


@pytest.mark.parametrize("current", [0, 8])
async def test_fence_loss_raises_and_ends_term(current: int) -> None:
    client = FakeTxn(False, [_get(current) if current else []])
    lost: list[str] = []

    class Scope:
        ended = False

        def spawn(self, coro: Any, *, name: str | None = None) -> Any:
            raise AssertionError

        def report_lost(self, reason: str) -> None:
            lost.append(reason)

    term = Term("broker", KEY, 7, 7, "a:1", scope=Scope())
    with pytest.raises(FenceLost) as e:
        await term.txn(client, success=["op"])
    assert e.value.reason == "FENCE_LOST"
    assert e.value.metadata == {"leader_key": KEY, "term": "7"}
    assert len(lost) == 1 and "lost" in lost[0]

from __future__ import annotations

from typing import Any

import pytest

from drover.coord.errors import FenceLost, InvalidFence
from drover.coord.fence import (
    FENCE_METADATA,
    Fence,
    fence_compare,
    fenced_txn,
    parse_fence,
)
from drover.coord.kv import Compare, Delete, Put
from drover.coord.memkv import MemoryKV
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


def test_the_compare_is_create_revision_equal() -> None:
    assert fence_compare(Fence(KEY, 7)) == Compare(KEY.encode(), "create", 7)


async def _leader(kv: MemoryKV) -> int:
    """Put the leader key; its term (create_revision)."""
    return (await kv.txn([], [Put(KEY.encode(), b"a:1")])).revision


async def test_fenced_txn_applies_while_the_term_holds() -> None:
    kv = MemoryKV()
    fence = Fence(KEY, await _leader(kv))
    res = await fenced_txn(kv, fence, ops=[Put(b"/x", b"1")])
    assert res.succeeded and (await kv.range(b"/x", b"")).kvs[0].value == b"1"


async def test_own_compare_failure_is_not_a_fence_loss() -> None:
    kv = MemoryKV()
    fence = Fence(KEY, await _leader(kv))
    lost: list[str] = []
    res = await fenced_txn(kv, fence, [Compare(b"/x", "version", 3)], [Put(b"/x", b"1")],
                           on_lost=lost.append)
    assert not res.succeeded and lost == []
    assert (await kv.range(b"/x", b"")).kvs == []


@pytest.mark.parametrize("recreated", [False, True])
async def test_fence_loss_raises_and_ends_term(recreated: bool) -> None:
    kv = MemoryKV()
    term_rev = await _leader(kv)
    await kv.txn([], [Delete(KEY.encode())])
    if recreated:  # another replica won: the key again, with a new create_revision
        await _leader(kv)
    lost: list[str] = []

    class Scope:
        ended = False

        def spawn(self, coro: Any, *, name: str | None = None) -> Any:
            raise AssertionError

        def report_lost(self, reason: str) -> None:
            lost.append(reason)

    term = Term("broker", KEY, term_rev, term_rev, "a:1", scope=Scope())
    with pytest.raises(FenceLost) as e:
        await term.txn(kv, ops=[Put(b"/x", b"1")])
    assert e.value.reason == "FENCE_LOST"
    assert e.value.metadata == {"leader_key": KEY, "term": str(term_rev)}
    assert len(lost) == 1 and ("now has term" if recreated else "is gone") in lost[0]
    assert (await kv.range(b"/x", b"")).kvs == []  # nothing written

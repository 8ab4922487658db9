"""RangeWindows: every key listed exactly once, at bounded etcd cost."""

from __future__ import annotations

import bisect
import random
import uuid

import pytest

from drover.coord.kv import prefix_end
from drover.state.core.windows import WIDTH, RangeWindows

PREFIX = b"/drover/v1/"


def list_all(keys: list[bytes], limit: int) -> tuple[list[bytes], int, int]:
    """Drive the windows against an etcd-3.4-like range over sorted ``keys``:
    (keys listed, keys etcd visited in total, requests)."""
    keys = sorted(keys)
    w = RangeWindows(PREFIX, prefix_end(PREFIX), limit=limit)
    out: list[bytes] = []
    visited = 0
    while not w.done:
        lo, hi = w.next()
        assert lo < hi or hi == prefix_end(PREFIX)
        i, j = bisect.bisect_left(keys, lo), bisect.bisect_left(keys, hi)
        visited += j - i  # etcd 3.4 walks the whole window to count it
        page = keys[i:min(j, i + limit)]
        out.extend(page)
        w.observe(page, j - i, j - i > limit)
    return out, visited, w.requests


def uuids(n: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    return [PREFIX + b"evaluations/default/" + str(uuid.UUID(int=rnd.getrandbits(128))).encode()
            for _ in range(n)]


@pytest.mark.parametrize("keys", [
    uuids(20_000),
    [PREFIX + f"jobs/default/job-{i:08d}".encode() for i in range(20_000)],
    # Skewed: a few kinds, one dense cluster, a sparse tail.
    [PREFIX + b"scheduler_config/-/config"]
    + [PREFIX + f"nodes/-/n{i}".encode() for i in range(30)]
    + uuids(15_000, seed=2) + [PREFIX + b"zz/" + bytes([i]) * 3 for i in range(1, 250)],
    # Keys longer than the numeric width: correctness holds (unbounded fallback).
    [PREFIX + b"x" * WIDTH + str(i).encode() for i in range(3000)],
    [],
], ids=["uuid", "sequential", "skewed", "long-keys", "empty"])
def test_lists_every_key_once_in_order(keys: list[bytes]) -> None:
    out, _, _ = list_all(keys, limit=500)
    assert out == sorted(keys)


def test_uniform_keys_cost_linear_not_quadratic() -> None:
    keys = uuids(50_000)
    limit = 500
    _, visited, requests = list_all(keys, limit=limit)
    # A moving start with a fixed end visits ~n^2 / (2 * limit) = 2.5M keys.
    assert visited < 5 * len(keys), visited
    assert requests < 4 * len(keys) // limit, requests


def test_sequential_keys_cost_linear() -> None:
    keys = [PREFIX + f"evaluations/default/{i:012d}".encode() for i in range(50_000)]
    _, visited, _ = list_all(keys, limit=500)
    assert visited < 5 * len(keys), visited


def test_bad_limit_and_use_after_done() -> None:
    with pytest.raises(ValueError, match="limit must be >= 1"):
        RangeWindows(PREFIX, prefix_end(PREFIX), limit=0)
    w = RangeWindows(PREFIX, prefix_end(PREFIX), limit=10)
    lo, hi = w.next()
    assert (lo, hi) == (PREFIX, prefix_end(PREFIX))  # first window: the whole range
    w.observe([], 0, False)
    assert w.done
    with pytest.raises(RuntimeError, match="fully listed"):
        w.next()

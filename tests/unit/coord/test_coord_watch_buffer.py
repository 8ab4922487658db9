from __future__ import annotations

import pytest

from drover.coord.kv import KV
from drover.coord.kv import WatchEvent as KVEvent
from drover.coord.watch_buffer import (
    Batch,
    EventType,
    KeyValue,
    Resync,
    WatchBuffer,
    batches_from_events,
)


def ev(rev: int, key: str, deleted: bool = False) -> KVEvent:
    return KVEvent(KV(key.encode(), b"" if deleted else b"v", rev, rev), deleted)


def test_events_group_by_revision_in_order() -> None:
    batches = batches_from_events([ev(5, "a"), ev(5, "b"), ev(6, "a", True), ev(8, "c")])
    assert [b.revision for b in batches] == [5, 6, 8]
    assert [e.kv.key for e in batches[0].events] == [b"a", b"b"]
    assert batches[1].events[0].type is EventType.DELETE
    assert batches_from_events([]) == []


def batch(rev: int, n: int = 1) -> Batch:
    from drover.coord.watch_buffer import WatchEvent

    kv = KeyValue(b"k", b"v", rev, rev, 1, 0)
    return Batch(rev, tuple(WatchEvent(EventType.PUT, kv) for _ in range(n)))


def test_buffer_is_bounded_by_events() -> None:
    buf = WatchBuffer(max_events=4)
    buf.push(batch(1, 3))
    assert not buf.full
    buf.push(batch(2, 1))
    assert buf.full and buf.events == 4
    assert [m.revision for m in buf.pop_many(1)] == [1]
    assert not buf.full and buf.events == 1


def test_resync_supersedes_buffered_batches() -> None:
    buf = WatchBuffer(max_events=10)
    buf.push(batch(1, 2))
    buf.push(batch(2, 2))
    buf.push(Resync(2, (), "compacted"))
    out = buf.pop_many(100)
    assert out == [Resync(2, (), "compacted")] and buf.events == 0


def test_buffer_rejects_out_of_order() -> None:
    buf = WatchBuffer(max_events=10)
    buf.push(batch(5))
    with pytest.raises(ValueError):
        buf.push(batch(5))
    with pytest.raises(ValueError):
        buf.push(Resync(4, ()))
    with pytest.raises(ValueError):
        WatchBuffer(0)

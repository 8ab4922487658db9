"""ContactStore: which etcd calls count as hearing from etcd.

A stale read's bound trusts this stamp, so it must move only on answers
that needed etcd's quorum. Found by the etcd-minority drill: a watch
re-created on an isolated etcd leader (before check-quorum deposed it)
stamped contact, and a read with max_stale was served from a cut replica.
"""

from __future__ import annotations

from virtual_clock import VirtualClock

from drover.coord.kv import Put
from drover.coord.memkv import MemoryKV
from drover.state.contact import ContactStore


def _store() -> tuple[VirtualClock, ContactStore]:
    clock = VirtualClock(100.0)
    return clock, ContactStore(MemoryKV(clock), clock)


async def test_creating_a_watch_is_not_contact() -> None:
    clock, store = _store()
    clock.advance(5.0)
    watch = await store.watch(b"a", b"b", 1)
    try:
        assert store.age() == 5.0
    finally:
        await watch.close()


async def test_reads_and_writes_are_contact() -> None:
    clock, store = _store()
    clock.advance(5.0)
    await store.txn([], [Put(b"a", b"1")])
    assert store.age() == 0.0
    clock.advance(3.0)
    page = await store.range(b"a", b"")
    assert store.age() == 0.0 and store.seen_revision == page.revision


async def test_a_failed_call_leaves_the_stamp_alone() -> None:
    clock, store = _store()
    clock.advance(4.0)

    async def refuse(*_a: object, **_k: object) -> None:
        raise ConnectionError("cut")

    store.inner.range = refuse  # type: ignore[method-assign,assignment]
    try:
        await store.range(b"a", b"")
    except ConnectionError:
        pass
    assert store.age() == 4.0

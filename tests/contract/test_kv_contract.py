"""One contract, two KVs: every test here runs against :class:`MemoryKV`
and a real etcd (through :class:`EtcdKV`) with the same body, so what
the in-memory twin promises is what etcd does."""

from __future__ import annotations

import asyncio

import pytest
from kv_backends import Backend

from drover.coord.kv import Compacted, Compare, Delete, LeaseNotFound, Put, WatchBatch, prefix_end

BOUND = 10.0  # seconds any one wait may take, on a loaded machine


async def next_batch(it: object) -> WatchBatch:
    return await asyncio.wait_for(anext(it), BOUND)  # type: ignore[call-overload]


async def test_one_revision_per_changing_txn(backend: Backend) -> None:
    kv, a, b = backend.kv, backend.key("a"), backend.key("b")
    r0 = await kv.revision()
    res = await kv.txn([], [Put(a, b"1"), Put(b, b"1")])
    assert res.succeeded and res.revision == r0 + 1
    page = await kv.range(a, b"")
    assert [(x.value, x.create_revision, x.mod_revision) for x in page.kvs] == [
        (b"1", r0 + 1, r0 + 1)]
    res = await kv.txn([], [Put(a, b"2")])
    assert res.revision == r0 + 2
    (x,) = (await kv.range(a, b"")).kvs
    assert (x.value, x.create_revision, x.mod_revision) == (b"2", r0 + 1, r0 + 2)
    # nothing changes: a failed compare, a delete that finds nothing
    assert (await kv.txn([Compare(a, "mod", 1)], [Put(a, b"3")])).revision == r0 + 2
    assert (await kv.txn([], [Delete(backend.key("absent"))])).revision == r0 + 2
    assert await kv.revision() == r0 + 2
    # a delete is a new revision; a put after it is a new creation
    assert (await kv.txn([], [Delete(a)])).revision == r0 + 3
    assert (await kv.range(a, b"")).kvs == []
    await kv.txn([], [Put(a, b"4")])
    (x,) = (await kv.range(a, b"")).kvs
    assert (x.create_revision, x.mod_revision) == (r0 + 4, r0 + 4)


async def test_compares_on_create_mod_and_version(backend: Backend) -> None:
    kv, a = backend.kv, backend.key("a")
    # an absent key compares as zeros: "create == 0" is put-if-absent
    assert (await kv.txn([Compare(a, "create", 0)], [Put(a, b"1")])).succeeded
    assert not (await kv.txn([Compare(a, "create", 0)], [Put(a, b"x")])).succeeded
    (x,) = (await kv.range(a, b"")).kvs
    assert (await kv.txn([Compare(a, "mod", x.mod_revision)], [Put(a, b"2")])).succeeded
    assert not (await kv.txn([Compare(a, "mod", x.mod_revision)], [Put(a, b"3")])).succeeded
    assert (await kv.txn([Compare(a, "create", x.create_revision), Compare(a, "version", 2)],
                         [Put(a, b"3")])).succeeded
    assert not (await kv.txn([Compare(a, "version", 2)], [Put(a, b"4")])).succeeded
    assert (await kv.range(a, b"")).kvs[0].value == b"3"


async def test_a_txn_is_all_or_nothing(backend: Backend) -> None:
    kv = backend.kv
    a, b, c = backend.key("a"), backend.key("b"), backend.key("c")
    await kv.txn([], [Put(a, b"1"), Put(b, b"1")])
    r = await kv.revision()
    # one failing compare among several: no op applies
    res = await kv.txn([Compare(a, "version", 1), Compare(b, "version", 9)],
                       [Put(a, b"2"), Delete(b), Put(c, b"2")])
    assert not res.succeeded and await kv.revision() == r
    page = await kv.range(backend.prefix, prefix_end(backend.prefix))
    assert [(x.key, x.value) for x in page.kvs] == [(a, b"1"), (b, b"1")]
    # all compares hold: every op applies, at one revision
    res = await kv.txn([Compare(a, "version", 1), Compare(b, "version", 1)],
                       [Put(a, b"2"), Delete(b), Put(c, b"2")])
    assert res.succeeded and res.revision == r + 1
    page = await kv.range(backend.prefix, prefix_end(backend.prefix))
    assert [(x.key, x.value, x.mod_revision) for x in page.kvs] == [(a, b"2", r + 1),
                                                                   (c, b"2", r + 1)]
    with pytest.raises(ValueError, match="at most"):
        await kv.txn([], [Put(backend.key(f"k{i}"), b"") for i in range(129)])


async def test_ranges_page_count_and_read_the_past(backend: Backend) -> None:
    kv, p = backend.kv, backend.prefix
    keys = [backend.key(f"k{i}") for i in range(5)]
    await kv.txn([], [Put(k, b"old") for k in keys])
    before = await kv.revision()
    await kv.txn([], [Put(keys[0], b"new"), Delete(keys[4])])
    page = await kv.range(p, prefix_end(p), limit=2)
    assert [x.key for x in page.kvs] == keys[:2] and page.more and page.count == 4
    assert page.revision == before + 1
    page = await kv.range(keys[2], prefix_end(p), limit=2)
    assert [x.key for x in page.kvs] == keys[2:4] and not page.more
    page = await kv.range(p, prefix_end(p), count_only=True)
    assert page.kvs == [] and page.count == 4
    # at a past revision: the old value and the since-deleted key
    page = await kv.range(p, prefix_end(p), revision=before)
    assert [(x.key, x.value) for x in page.kvs] == [(k, b"old") for k in keys]
    assert page.revision == before + 1  # the header is the store's revision
    # b"\0" as range end: every key from the start key on
    page = await kv.range(keys[3], b"\0", limit=1)
    assert [x.key for x in page.kvs] == [keys[3]]


async def test_compaction_raises_compacted_for_reads_watches_and_itself(
        backend: Backend) -> None:
    kv, a = backend.kv, backend.key("a")
    await kv.txn([], [Put(a, b"1")])
    old = await kv.revision()
    await kv.txn([], [Put(a, b"2")])
    await kv.txn([], [Put(a, b"3")])
    at = old + 1
    await kv.compact(at)
    with pytest.raises(Compacted):
        await kv.range(a, b"", revision=old)
    (x,) = (await kv.range(a, b"", revision=at)).kvs  # the compaction revision stays
    assert x.value == b"2"
    with pytest.raises(Compacted):
        await kv.compact(at)
    with pytest.raises(Compacted) as err:  # at watch() or at its first read
        w = await kv.watch(a, b"", old)
        try:
            await next_batch(aiter(w))
        finally:
            await w.close()
    assert err.value.compact_revision >= at
    # a watch from the compaction revision itself is whole
    w = await kv.watch(a, b"", at)
    try:
        it = aiter(w)
        values: list[bytes] = []
        while len(values) < 2:
            values += [e.kv.value for e in (await next_batch(it)).events]
        assert values == [b"2", b"3"]
    finally:
        await w.close()


async def test_watch_from_a_revision_is_ordered_and_complete(backend: Backend) -> None:
    kv, p = backend.kv, backend.prefix
    a, b = backend.key("a"), backend.key("b")
    start = await kv.revision() + 1
    await kv.txn([], [Put(a, b"1"), Put(b, b"1")])
    await kv.txn([], [Delete(a)])
    await kv.txn([], [Put(backend.key("x") + b"/../", b"1")])  # in the prefix too
    await kv.txn([], [Put(b"/other" + p, b"1")])  # outside the prefix: not seen
    w = await kv.watch(p, prefix_end(p), start)
    try:
        it = aiter(w)
        seen: list[tuple[int, bytes, bool]] = []
        while len(seen) < 4:
            batch = await next_batch(it)
            assert all(e.kv.mod_revision <= batch.revision for e in batch.events)
            seen += [(e.kv.mod_revision, e.kv.key, e.deleted) for e in batch.events]
        await kv.txn([], [Put(b, b"2")])  # live, after the catch-up
        batch = await next_batch(it)
        seen += [(e.kv.mod_revision, e.kv.key, e.deleted) for e in batch.events]
        assert seen == [
            (start, a, False), (start, b, False), (start + 1, a, True),
            (start + 2, backend.key("x") + b"/../", False), (start + 4, b, False),
        ]
        # a progress notification: no events, the store's current revision
        w.request_progress()
        batch = await next_batch(it)
        assert batch.events == [] and batch.revision == await kv.revision()
    finally:
        await w.close()


async def test_a_watch_skips_what_its_consumer_applied(backend: Backend) -> None:
    """skip_applied: events at or below ``applied()`` are left out; a batch
    left with none still comes, empty, at its revision."""
    kv, p = backend.kv, backend.prefix
    a, b = backend.key("a"), backend.key("b")
    start = await kv.revision() + 1
    w = await kv.watch(p, prefix_end(p), start)
    applied = [0]
    w.skip_applied(lambda: applied[0])
    try:
        it = aiter(w)
        first = await kv.txn([], [Put(a, b"1"), Put(b, b"1")])
        batch = await next_batch(it)
        assert [(e.kv.key, e.kv.mod_revision) for e in batch.events] == [
            (a, first.revision), (b, first.revision)]
        second = await kv.txn([], [Put(a, b"2")])
        applied[0] = second.revision  # applied before the watch delivers it
        batch = await next_batch(it)
        assert batch.events == [] and batch.revision == second.revision
        third = await kv.txn([], [Delete(b)])
        batch = await next_batch(it)
        assert [(e.kv.key, e.deleted) for e in batch.events] == [(b, True)]
        assert batch.revision == third.revision
    finally:
        await w.close()


async def test_revoking_a_lease_deletes_its_keys_in_one_revision(backend: Backend) -> None:
    kv, a, b, c = backend.kv, backend.key("a"), backend.key("b"), backend.key("c")
    lease = await kv.lease_grant(30)
    await kv.txn([], [Put(a, b"1", lease=lease), Put(b, b"1", lease=lease), Put(c, b"1")])
    assert await kv.lease_keepalive(lease) == 30
    r = await kv.revision()
    w = await kv.watch(backend.prefix, prefix_end(backend.prefix), r + 1)
    try:
        await kv.lease_revoke(lease)
        batch = await next_batch(aiter(w))
        assert sorted((e.kv.key, e.deleted, e.kv.mod_revision) for e in batch.events) == [
            (a, True, r + 1), (b, True, r + 1)]
    finally:
        await w.close()
    page = await kv.range(backend.prefix, prefix_end(backend.prefix))
    assert [x.key for x in page.kvs] == [c]
    with pytest.raises(LeaseNotFound):
        await kv.lease_keepalive(lease)
    with pytest.raises(LeaseNotFound):
        await kv.txn([], [Put(a, b"2", lease=lease)])


@pytest.mark.parametrize("backend", ["memory", pytest.param("etcd", marks=pytest.mark.slow)],
                         indirect=True)
async def test_an_expired_lease_deletes_its_keys(backend: Backend) -> None:
    kv, a = backend.kv, backend.key("a")
    ttl = 2  # etcd's floor on these settings
    kept, lost = await kv.lease_grant(ttl), await kv.lease_grant(ttl)
    await kv.txn([], [Put(a, b"1", lease=lost), Put(backend.key("b"), b"1", lease=kept)])
    await backend.pass_time(ttl / 2)
    await kv.lease_keepalive(kept)
    assert len((await kv.range(a, b"")).kvs) == 1  # half a TTL on: still there
    await backend.pass_time(ttl / 2 + 0.6)
    await kv.lease_keepalive(kept)
    # etcd's lessor checks expiry every 500 ms: give it a bounded while
    for _ in range(int(BOUND / 0.1)):
        if not (await kv.range(a, b"")).kvs:
            break
        await asyncio.sleep(0.1)
    assert (await kv.range(a, b"")).kvs == []
    assert len((await kv.range(backend.key("b"), b"")).kvs) == 1  # kept alive
    with pytest.raises(LeaseNotFound):
        await kv.lease_keepalive(lost)
    await kv.lease_revoke(kept)


async def test_compare_on_the_lease_a_key_is_attached_to(backend: Backend) -> None:
    kv, a, b = backend.kv, backend.key("a"), backend.key("b")
    mine, other = await kv.lease_grant(30), await kv.lease_grant(30)
    try:
        await kv.txn([], [Put(a, b"1", lease=mine), Put(b, b"1")])
        assert not (await kv.txn([Compare(a, "lease", other)], [Delete(a)])).succeeded
        assert (await kv.txn([Compare(b, "lease", 0)], [Put(b, b"2")])).succeeded
        # an absent key has lease 0, as it has revision 0
        assert (await kv.txn([Compare(backend.key("absent"), "lease", 0)], [])).succeeded
        assert (await kv.txn([Compare(a, "lease", mine)], [Delete(a)])).succeeded
        assert (await kv.range(a, b"")).kvs == []
    finally:
        await kv.lease_revoke(mine)
        await kv.lease_revoke(other)


async def test_a_keepalive_stream_answers_every_send_in_order(backend: Backend) -> None:
    kv = backend.kv
    lease = await kv.lease_grant(30)
    stream = kv.keepalives(lease)
    try:
        it = aiter(stream)
        await stream.send()
        await stream.send()
        assert [await asyncio.wait_for(anext(it), BOUND) for _ in range(2)] == [30, 30]
        stream.suspect()  # harmless on a member that answers
        await kv.lease_revoke(lease)
        await stream.send()
        assert await asyncio.wait_for(anext(it), BOUND) <= 0  # the lease is gone
    finally:
        stream.cancel()
    assert backend.kv.suspect_after > 0


async def test_a_watch_with_progress_notify_sees_changes(backend: Backend) -> None:
    kv, a = backend.kv, backend.key("a")
    w = await kv.watch(a, b"", 0, progress_notify=True)
    try:
        await kv.txn([], [Put(a, b"1")])
        batch = await next_batch(aiter(w))
        assert [(e.kv.key, e.kv.value) for e in batch.events] == [(a, b"1")]
        w.suspect()  # harmless on a member that answers
    finally:
        await w.close()


async def test_newest_is_the_key_modified_last(backend: Backend) -> None:
    kv, p = backend.kv, backend.prefix
    a, b = backend.key("a"), backend.key("b")
    assert await kv.newest(p, prefix_end(p)) is None
    await kv.txn([], [Put(b, b"1")])
    await kv.txn([], [Put(a, b"1")])
    got = await kv.newest(p, prefix_end(p))
    assert got is not None and (got.key, got.value) == (a, b"")
    assert got.mod_revision == await kv.revision()
    await kv.txn([], [Put(b, b"2")])
    got = await kv.newest(p, prefix_end(p))
    assert got is not None and got.key == b
    await kv.txn([], [Delete(b)])  # a delete leaves no key: the newest live one answers
    got = await kv.newest(p, prefix_end(p))
    assert got is not None and got.key == a


async def test_summary_counts_the_range_and_dates_its_newest_write(backend: Backend) -> None:
    kv, p = backend.kv, backend.prefix
    a, b = backend.key("a"), backend.key("b")
    empty = await kv.summary(p, prefix_end(p))
    assert (empty.count, empty.newest) == (0, 0) and empty.revision == await kv.revision()
    await kv.txn([], [Put(b, b"1")])
    await kv.txn([], [Put(a, b"1")])
    r_a = await kv.revision()
    got = await kv.summary(p, prefix_end(p))
    assert (got.count, got.newest, got.revision) == (2, r_a, r_a)
    # A delete is not a write of a live key: the count shows it, newest does not.
    await kv.txn([], [Delete(b)])
    got = await kv.summary(p, prefix_end(p))
    assert (got.count, got.newest, got.revision) == (1, r_a, r_a + 1)
    await kv.txn([], [Put(backend.key("c"), b"1")])
    got = await kv.summary(a, b"")  # exactly one key
    assert (got.count, got.newest) == (1, r_a)

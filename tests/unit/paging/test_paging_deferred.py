"""IndexedCollection(defer_discards=True): queued removals are never visible."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.paging import IndexedCollection, Key

STATUSES = ("pending", "complete", "failed")


@dataclass(frozen=True)
class Rec:
    create_index: int
    id: str
    status: str = "pending"
    job_id: str = "web"


def make(defer: bool) -> IndexedCollection[Rec]:
    return IndexedCollection(
        key_of=lambda r: Key(r.create_index, r.id),
        fields={"status": lambda r: r.status, "job_id": lambda r: r.job_id,
                "id": lambda r: r.id},
        indexed=("status", "job_id"), defer_discards=defer,
    )  # fmt: skip


def view(c: IndexedCollection[Rec]) -> tuple[object, ...]:
    """Everything a reader can observe (candidates first: it does not settle)."""
    where = {"status": frozenset({"pending", "failed"})}
    cands = [(k, r) for k, r in c.candidates(where)]
    after = cands[1][0] if len(cands) > 1 else None
    cands_after = list(c.candidates({"job_id": frozenset({"a"})}, after=after,
                                    descending=True))  # fmt: skip
    return (
        cands, cands_after, list(c),
        c.count({"status": frozenset({"pending"})}),
        c.count({"status": frozenset({"pending"}), "job_id": frozenset({"b"})}),
        sorted(map(str, c.index_values("status"))),
        list(c.keys("job_id", "a")),
        sorted(r.id for r in c.members({"job_id": frozenset({"b"})})),
        c.plan({"status": frozenset({"failed"})}),
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "del"]), st.integers(0, 11),
                          st.sampled_from(STATUSES), st.sampled_from(["a", "b"])),
                max_size=60))  # fmt: skip
def test_deferred_collection_reads_like_an_eager_one(ops) -> None:
    eager, lazy = make(False), make(True)
    rev = 0
    for op, i, status, job in ops:
        rev += 1
        for c in (eager, lazy):
            old = c.by_id(f"o{i}")
            if op == "del":
                c.remove_id(f"o{i}")
            else:
                # A put keeps the key of a live object; a re-create gets a new one.
                create = old.create_index if old is not None else rev
                c.upsert(Rec(create, f"o{i}", status, job))
        assert view(lazy) == view(eager)
    assert lazy.flush() == 0 and lazy.queued == 0
    assert view(lazy) == view(eager)


def test_removals_queue_until_flushed_in_chunks() -> None:
    c = make(True)
    c.load([Rec(i, f"o{i}", STATUSES[i % 3]) for i in range(10)])
    for i in range(6):
        c.remove_id(f"o{i}")
    assert c.queued == 6
    # The walk skips queued keys without settling the queue...
    ids = [r.id for _, r in c.candidates({"status": frozenset({"pending"})})]
    assert ids == ["o6", "o9"] and c.queued == 6
    assert c.flush(4) == 2 and c.flush(4) == 0
    # ...and a removal re-created under the same id is a new object.
    c.remove_id("o6")
    c.upsert(Rec(20, "o6", "pending"))
    assert c.queued == 1
    assert [k for k, _ in c.candidates({"status": frozenset({"pending"})})] == [
        Key(9, "o9"), Key(20, "o6")]
    assert c.count({"status": frozenset({"pending"})}) == 2 and c.queued == 0


def test_reinserting_a_queued_key_settles_first() -> None:
    # (Only a replayed event could bring back the very same key; it must
    # not be dropped by its own late removal.)
    c = make(True)
    c.load([Rec(1, "o1", "failed"), Rec(2, "o2", "failed")])
    c.remove_id("o1")
    c.upsert(Rec(1, "o1", "failed"))
    assert c.queued == 0
    assert [k for k, _ in c.candidates({"status": frozenset({"failed"})})] == [
        Key(1, "o1"), Key(2, "o2")]
    assert c.count({"status": frozenset({"failed"})}) == 2


def test_load_drops_the_queue() -> None:
    c = make(True)
    c.load([Rec(i, f"o{i}") for i in range(5)])
    c.remove_id("o1")
    c.load([Rec(7, "o7")])
    assert c.queued == 0 and c.count({"status": frozenset({"pending"})}) == 1


def test_eager_collection_never_queues() -> None:
    c = make(False)
    c.load([Rec(i, f"o{i}") for i in range(3)])
    c.remove_id("o0")
    assert c.queued == 0 and c.flush() == 0
    assert [r.id for r in c] == ["o1", "o2"]

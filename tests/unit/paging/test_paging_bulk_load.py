"""IndexedCollection.load (the initial list's bulk build) leaves the
collection exactly as inserting the same items one by one would, and the
SortedList it cuts from sorted input behaves as one built by sorting."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from drover.paging import IndexedCollection, Key
from drover.paging.sorted_lists import sorted_list_of


@dataclass(frozen=True)
class Rec:
    create_index: int
    id: str
    status: str
    job: str
    deployment_id: str


FIELDS = {"status": lambda r: r.status, "job": lambda r: r.job,
          "deployment_id": lambda r: r.deployment_id, "id": lambda r: r.id}


def make() -> IndexedCollection[Rec]:
    return IndexedCollection(
        key_of=lambda r: Key(r.create_index, r.id), fields=FIELDS,
        indexed=("status", "job", "deployment_id"), id_index=True,
        sparse=("deployment_id",), defer_discards=True,
    )  # fmt: skip


recs = st.lists(
    st.builds(Rec, create_index=st.integers(1, 12),  # many ties: one txn's creations
              id=st.text("abc/", min_size=1, max_size=4),
              status=st.sampled_from(["pending", "complete", "failed"]),
              job=st.sampled_from([f"j{i}" for i in range(12)]),
              deployment_id=st.sampled_from(["", "", "", "d1", "d2"])),
    max_size=80, unique_by=lambda r: r.id,
)


def state(c: IndexedCollection[Rec]) -> dict[str, object]:
    where: dict[str, frozenset[Hashable]]
    out: dict[str, object] = {"order": list(c.keys()), "items": dict(c.items)}
    for field in ("status", "job", "deployment_id"):
        values = sorted(map(str, c.index_values(field)))
        out[field] = values
        for v in values:
            out[f"{field}={v}"] = list(c.keys(field, v))
            out[f"{field}={v} desc"] = list(c.keys(field, v, descending=True))
            where = {field: frozenset([v])}
            out[f"count {field}={v}"] = c.count(where)
    for prefix in ("a", "ab", "b/", "c"):
        out[f"prefix {prefix}"] = [k for k, _ in c.candidates({}, prefix=prefix)]
    return out


@settings(max_examples=150, deadline=None)
@given(recs, st.randoms(use_true_random=False))
def test_load_equals_one_by_one_inserts(items: list[Rec], rnd: object) -> None:
    one_by_one = make()
    for r in items:
        one_by_one.upsert(r)
    shuffled = list(items)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    loaded = make()
    loaded.upsert(Rec(99, "zz", "pending", "j0", "d9"))  # replaced by the load
    loaded.load(shuffled)
    assert state(loaded) == state(one_by_one)
    # ... and both keep behaving alike after the load.
    for c in (loaded, one_by_one):
        for r in items[::3]:
            c.remove_id(r.id)
        c.upsert(Rec(50, "new", "failed", "j1", "d1"))
        c.flush()
    assert state(loaded) == state(one_by_one)


def test_load_refuses_two_items_with_one_id() -> None:
    with pytest.raises(ValueError, match="share an id"):
        make().load([Rec(1, "a", "pending", "j", ""), Rec(2, "a", "pending", "j", "")])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 10_000), unique=True, max_size=5000),
       st.lists(st.integers(0, 10_000), max_size=50))
def test_sorted_list_of_is_a_sorted_list(values: list[int], ops: list[int]) -> None:
    values.sort()
    cut, built = sorted_list_of(list(values)), SortedList(values)
    assert list(cut) == list(built) and len(cut) == len(built)
    for i, v in enumerate(ops):
        for sl in (cut, built):
            if i % 2:
                sl.discard(v)
            else:
                sl.add(v)
        cut._check()
        assert list(cut) == list(built)
        assert cut.bisect_left(v) == built.bisect_left(v)


uniform = st.lists(
    st.builds(Rec, create_index=st.integers(1, 12), id=st.text("abc/", min_size=1, max_size=4),
              status=st.just("pending"), job=st.sampled_from(["j0", "j1"]),
              deployment_id=st.just("")),
    max_size=40, unique_by=lambda r: r.id,
)


@settings(max_examples=100, deadline=None)
@given(uniform, st.booleans(), st.randoms(use_true_random=False))
def test_load_of_one_valued_fields_and_id_ordered_input(
        items: list[Rec], in_id_order: bool, rnd: object) -> None:
    """One status everywhere (one bucket, no grouping), a sparse field empty
    everywhere (no bucket), items already in id order (no id sort)."""
    one_by_one = make()
    for r in items:
        one_by_one.upsert(r)
    given_order = sorted(items, key=lambda r: r.id) if in_id_order else list(items)
    if not in_id_order:
        rnd.shuffle(given_order)  # type: ignore[attr-defined]
    loaded = make()
    loaded.load(given_order)
    assert state(loaded) == state(one_by_one)
    for c in (loaded, one_by_one):
        c.upsert(Rec(50, "new", "failed", "j1", "d1"))
        for r in items[::2]:
            c.remove_id(r.id)
        c.flush()
    assert state(loaded) == state(one_by_one)


@settings(max_examples=100, deadline=None)
@given(recs, st.lists(st.integers(0, 80), max_size=6), st.booleans(),
       st.randoms(use_true_random=False))
def test_a_bulk_load_fed_in_pieces_equals_one_load(
        items: list[Rec], cuts: list[int], in_id_order: bool, rnd: object) -> None:
    """The initial list feeds a BulkLoad page by page: the same collection as
    one load of all the items (and as inserting them one by one)."""
    given_order = sorted(items, key=lambda r: r.id) if in_id_order else list(items)
    if not in_id_order:
        rnd.shuffle(given_order)  # type: ignore[attr-defined]
    whole, pieces, one_by_one = make(), make(), make()
    whole.load(given_order)
    bulk = pieces.bulk()
    bounds = [0, *sorted(c for c in cuts if c <= len(given_order)), len(given_order)]
    for lo, hi in itertools.pairwise(bounds):
        bulk.add(given_order[lo:hi])
    assert len(bulk) == len(items)
    pieces.load_bulk(bulk)
    for r in items:
        one_by_one.upsert(r)
    assert state(pieces) == state(whole) == state(one_by_one)


def test_a_bulk_load_refuses_an_id_added_twice() -> None:
    c = make()
    bulk = c.bulk()
    bulk.add([Rec(1, "a", "pending", "j", "")])
    bulk.add([Rec(2, "a", "pending", "j", "")])
    with pytest.raises(ValueError, match="share an id"):
        c.load_bulk(bulk)

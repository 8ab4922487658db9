"""Uniform indexes (no bucket while every key has one value), small buckets
kept as plain lists, and the one-search insert answer every read exactly as
a brute-force scan of the objects does."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from drover.paging import IndexedCollection, Key
from drover.paging import index as index_mod
from drover.paging.index import MIXED
from drover.paging.sorted_lists import add_new


@dataclass(frozen=True)
class Rec:
    create_index: int
    id: str
    ns: str = "default"
    status: str = "pending"
    job: str = "j0"


FIELDS = {"ns": lambda r: r.ns, "status": lambda r: r.status, "job": lambda r: r.job,
          "id": lambda r: r.id}
INDEXED = ("ns", "status", "job")


def make(defer: bool) -> IndexedCollection[Rec]:
    return IndexedCollection(key_of=lambda r: Key(r.create_index, r.id), fields=FIELDS,
                             indexed=INDEXED, id_index=True, defer_discards=defer)


def key(r: Rec) -> Key:
    return Key(r.create_index, r.id)


def expected(model: Mapping[str, Rec]) -> dict[str, object]:
    """Every read, answered by scanning the objects."""
    recs = sorted(model.values(), key=key)
    out: dict[str, object] = {"all": [key(r) for r in recs], "len": len(recs)}
    for field in INDEXED:
        get = FIELDS[field]
        values = sorted({str(get(r)) for r in recs})
        out[f"values {field}"] = values
        for v in [*values, "absent"]:
            hits = [key(r) for r in recs if get(r) == v]
            out[f"{field}={v}"] = hits
            out[f"{field}={v} desc"] = hits[::-1]
            out[f"{field}={v} after"] = hits[1:]
            out[f"count {field}={v}"] = len(hits)
    pairs = [key(r) for r in recs if r.ns == "default" and r.status in ("pending", "failed")]
    out["count pair"] = len(pairs)
    out["cands pair"] = pairs
    return out


def observed(c: IndexedCollection[Rec], model: Mapping[str, Rec]) -> dict[str, object]:
    recs = sorted(model.values(), key=key)
    out: dict[str, object] = {"all": list(c.keys()), "len": len(c)}
    for field in INDEXED:
        get = FIELDS[field]
        values = sorted(map(str, c.index_values(field)))
        out[f"values {field}"] = values
        for v in [*sorted({str(get(r)) for r in recs}), "absent"]:
            where = {field: frozenset([v])}
            hits = list(c.keys(field, v))
            out[f"{field}={v}"] = hits
            out[f"{field}={v} desc"] = list(c.keys(field, v, descending=True))
            out[f"{field}={v} after"] = list(c.keys(field, v, after=hits[0])) if hits else []
            out[f"count {field}={v}"] = c.count(where)
            # candidates/members are supersets: keep what matches
            cands = [k for k, r in c.candidates(where) if get(r) == v]
            assert cands == hits
            assert sorted(map(key, (r for r in c.members(where) if get(r) == v))) == hits
    pair: dict[str, frozenset[Hashable]] = {"ns": frozenset(["default"]),
                                            "status": frozenset(["pending", "failed"])}
    out["count pair"] = c.count(pair)
    out["cands pair"] = [k for k, r in c.candidates(pair)
                         if r.ns == "default" and r.status in ("pending", "failed")]
    return out


ops = st.lists(st.tuples(
    st.sampled_from(["put", "put", "put", "del", "flush", "load"]),
    st.integers(0, 39),
    st.sampled_from(["default", "default", "default", "other"]),
    st.sampled_from(["pending", "complete", "complete", "failed"]),
    st.sampled_from(["j0", "j0", "j1", "j2", "j3"]),
), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ops, st.booleans(), st.sampled_from([2, 256]))
def test_reads_equal_a_scan_through_uniform_and_small_buckets(
        script: list[tuple[str, int, str, str, str]], defer: bool, small: int) -> None:
    # 2: buckets of 3+ keys become SortedLists, so promotions happen too;
    # 256: every bucket stays a list (one-key removals search, larger filter).
    with pytest.MonkeyPatch.context() as m:
        m.setattr(index_mod, "SMALL_BUCKET", small)
        c = make(defer)
        model: dict[str, Rec] = {}
        rev = 0
        for op, i, ns, status, job in script:
            rev += 1
            oid = f"o{i:02}"
            if op == "put":
                old = model.get(oid)
                rec = Rec(old.create_index if old else rev, oid, ns, status, job)
                model[oid] = rec
                c.upsert(rec)
            elif op == "del":
                model.pop(oid, None)
                c.remove_id(oid)
            elif op == "flush":
                c.flush()
            else:  # a bulk load of what the model holds, one field set alike
                model = {k: Rec(r.create_index, r.id, r.ns, "complete", r.job)
                         for k, r in model.items()}
                c.load(list(model.values()))
            assert observed(c, model) == expected(model)


def test_one_value_everywhere_keeps_no_bucket_until_a_second_value() -> None:
    c = make(defer=True)
    c.load([Rec(i, f"o{i:03}", job=f"j{i % 7}") for i in range(1, 500)])
    ns = c._indexes["ns"]
    assert ns.uniform == "default" and not ns._buckets
    c.upsert(Rec(600, "x", ns="default"))
    assert ns.uniform == "default" and not ns._buckets  # still free to write
    c.upsert(Rec(601, "y", ns="other"))
    assert ns.uniform is MIXED
    assert c.count({"ns": frozenset(["default"])}) == 500
    assert list(c.keys("ns", "other")) == [Key(601, "y")]
    assert c._indexes["job"].uniform is MIXED  # several jobs: buckets


def test_a_value_change_on_a_uniform_index_leaves_the_key_only_in_its_new_bucket() -> None:
    c = make(defer=False)
    for i in range(1, 5):
        c.upsert(Rec(i, f"o{i}"))
    assert c._indexes["status"].uniform == "pending"
    c.upsert(Rec(2, "o2", status="complete"))
    assert list(c.keys("status", "pending")) == [Key(1, "o1"), Key(3, "o3"), Key(4, "o4")]
    assert list(c.keys("status", "complete")) == [Key(2, "o2")]


def test_an_emptied_collection_turns_uniform_again() -> None:
    c = make(defer=True)
    c.upsert(Rec(1, "a", ns="x"))
    c.upsert(Rec(2, "b", ns="y"))
    assert c._indexes["ns"].uniform is MIXED
    c.remove_id("a")
    c.remove_id("b")
    c.upsert(Rec(3, "c", ns="z"))  # removals still queued: not fresh
    assert c._indexes["ns"].uniform is MIXED
    c.remove_id("c")
    c.flush()
    c.upsert(Rec(4, "d", ns="w"))
    assert c._indexes["ns"].uniform == "w"
    assert sorted(map(str, c.index_values("ns"))) == ["w"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=200), st.lists(st.integers(0, 3000), max_size=60))
def test_add_new_is_add_unless_present(initial: list[int], adds: list[int]) -> None:
    ours, theirs = SortedList(initial), SortedList(initial)
    ours._reset(4)  # small sublists: adds split them
    theirs._reset(4)
    for v in [*adds, *(max(adds or [0]) + k for k in range(30))]:
        present = v in theirs
        if not present:
            theirs.add(v)
        assert add_new(ours, v) is not present
        ours._check()
        assert list(ours) == list(theirs)
        assert [ours[i] for i in range(0, len(ours), 7)] == [theirs[i] for i in
                                                             range(0, len(theirs), 7)]


@pytest.mark.parametrize("defer", [True, False])
def test_a_few_removals_from_a_long_list_bucket_remove_exactly_those(defer: bool) -> None:
    c = make(defer)
    c.load([Rec(i, f"o{i:02}", job="j0" if i % 2 else "j1") for i in range(1, 61)])
    assert isinstance(c._indexes["job"]._buckets["j0"]._keys, list)  # 30 keys: a list
    for i in (7, 31, 59):
        c.remove_id(f"o{i:02}")
    c.flush()
    left = [Key(i, f"o{i:02}") for i in range(1, 61, 2) if i not in (7, 31, 59)]
    assert list(c.keys("job", "j0")) == left
    assert c.count({"job": frozenset(["j0"])}) == 27

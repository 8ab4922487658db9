"""IndexedCollection(sparse=...) and the lazily kept id index answer every
read exactly as a collection indexing every value, eagerly."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.paging import IndexedCollection, Key

STATUSES = ("pending", "complete")
DEPLOYMENTS = ("", "", "d1", "d2")  # mostly empty, as on evaluations


@dataclass(frozen=True)
class Rec:
    create_index: int
    id: str
    status: str = "pending"
    deployment_id: str = ""


FIELDS = {"status": lambda r: r.status, "deployment_id": lambda r: r.deployment_id,
          "id": lambda r: r.id}


def make(sparse: bool) -> IndexedCollection[Rec]:
    return IndexedCollection(
        key_of=lambda r: Key(r.create_index, r.id), fields=FIELDS,
        indexed=("status", "deployment_id"), id_index=True,
        sparse=("deployment_id",) if sparse else (), defer_discards=sparse,
    )  # fmt: skip


def matching(c: IndexedCollection[Rec], where: Mapping[str, frozenset[Hashable]],
             **kw: object) -> list[str]:
    """What a reader keeps of the candidates (they are a superset)."""
    return [r.id for _, r in c.candidates(where, **kw)  # type: ignore[arg-type]
            if all(FIELDS[f](r) in vs for f, vs in where.items())
            and r.id.startswith(str(kw.get("prefix", "")))]


def view(c: IndexedCollection[Rec]) -> tuple[object, ...]:
    empty = {"deployment_id": frozenset({""})}
    some = {"deployment_id": frozenset({"", "d1"}), "status": frozenset({"pending"})}
    first = next(iter(c.candidates({})), None)
    return (
        matching(c, empty), matching(c, some), matching(c, {"deployment_id": frozenset({"d2"})}),
        matching(c, empty, descending=True, after=first[0] if first else None),
        matching(c, {}, prefix="o1"), matching(c, empty, prefix="o1"),
        c.count({"deployment_id": frozenset({"d1"})}),
        c.count({"status": frozenset({"pending"})}),
        sorted(r.id for r in c.members(empty) if r.deployment_id == ""),
        sorted(map(str, c.index_values("deployment_id"))),
        list(c.keys("deployment_id", "")), list(c.keys("deployment_id", "d1")),
        len(c), [r.id for r in c],
    )


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "put", "del"]), st.integers(0, 14),
                          st.sampled_from(STATUSES), st.sampled_from(DEPLOYMENTS)),
                max_size=80))  # fmt: skip
def test_sparse_lazy_collection_reads_like_a_dense_eager_one(ops) -> None:
    dense, sparse = make(False), make(True)
    initial = [Rec(i, f"o{i}", STATUSES[i % 2], DEPLOYMENTS[i % 4]) for i in range(6)]
    dense.load(initial)
    sparse.load(initial)
    rev = 100
    for op, i, status, dep in ops:
        rev += 1
        for c in (dense, sparse):
            old = c.by_id(f"o{i}")
            if op == "del":
                c.remove_id(f"o{i}")
            else:
                create = old.create_index if old is not None else rev
                c.upsert(Rec(create, f"o{i}", status, dep))
        assert view(sparse) == view(dense)


def test_the_empty_value_is_not_indexed_and_counts_fall_back() -> None:
    c = make(True)
    c.load([Rec(i, f"o{i}", deployment_id="d1" if i == 3 else "") for i in range(10)])
    assert c.count({"deployment_id": frozenset({""})}) is None  # the caller walks
    assert c.count({"deployment_id": frozenset({"d1"})}) == 1
    assert c.plan({"deployment_id": frozenset({""})}) is None
    assert c.plan({"deployment_id": frozenset({"d1"})}) == "deployment_id"
    assert sorted(map(str, c.index_values("deployment_id"))) == ["", "d1"]


def test_removed_ids_linger_until_flushed_in_sorted_batches() -> None:
    c = make(True)  # deferred: flush() cuts the ids
    c.load([Rec(i, f"o{i:02}") for i in range(20)])
    for i in range(15):
        c.remove_id(f"o{i:02}")
    c.upsert(Rec(99, "o03"))  # re-created before the flush: stays listed
    assert len(c._ids or ()) == 20 and len(c._ids.gone if c._ids else ()) == 14
    assert matching(c, {}, prefix="o0") == ["o03"]  # lingering ids are skipped
    c.flush()
    assert list(c._ids or ()) == ["o03", *(f"o{i}" for i in range(15, 20))]
    assert c._ids is not None and not c._ids.gone


def test_without_deferral_removed_ids_compact_at_half_the_list() -> None:
    c: IndexedCollection[Rec] = IndexedCollection(
        key_of=lambda r: Key(r.create_index, r.id), fields=FIELDS, id_index=True)
    c.load([Rec(i, f"o{i:02}") for i in range(20)])
    for i in range(10):
        c.remove_id(f"o{i:02}")
    assert len(c._ids or ()) == 20 and len(c._ids.gone if c._ids else ()) == 10
    assert matching(c, {}, prefix="o0") == []
    c.remove_id("o10")
    assert len(c._ids or ()) == 9 and c._ids is not None and not c._ids.gone
    assert matching(c, {}, prefix="o1") == [f"o{i}" for i in range(11, 20)]

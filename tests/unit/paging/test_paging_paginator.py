from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drover.errors import InvalidArgument
from drover.filter import FieldKind, FieldType, FilterCompiler, Schema
from drover.paging import (
    IndexedCollection,
    InvalidPageToken,
    Key,
    PageRequest,
    PageTokenCodec,
    Paginator,
    PagingDefaults,
)

STATUSES = ("pending", "complete", "failed")


@dataclass(frozen=True)
class Rec:
    create_index: int
    id: str
    namespace: str = "default"
    job_id: str = "web"
    status: str = "pending"
    priority: int = 50


STRING = FieldType(FieldKind.STRING)
SCHEMA = Schema.for_attributes(
    {
        "id": STRING,
        "namespace": STRING,
        "job_id": STRING,
        "status": FieldType.enum(STATUSES),
        "priority": FieldType(FieldKind.INT),
    }
)
FILTERS = FilterCompiler(SCHEMA)
INDEXED = ("namespace", "job_id", "status")


def collection(recs=()) -> IndexedCollection[Rec]:
    coll = IndexedCollection(
        key_of=lambda r: Key(r.create_index, r.id),
        fields={name: SCHEMA.getter(name) for name in SCHEMA.fields},
        indexed=INDEXED,
    )
    coll.load(recs)
    return coll


def sample(n: int) -> list[Rec]:
    return [
        Rec(i, f"e{i:04d}", namespace=("default", "prod")[i % 2], job_id=f"job{i % 5}",
            status=STATUSES[i % 3], priority=i % 100)
        for i in range(1, n + 1)
    ]  # fmt: skip


def walk(paginator, coll, request, matcher=None, **kw) -> list[list[Rec]]:
    pages = []
    while True:
        page = paginator.page(coll, request, matcher, **kw)
        pages.append(list(page.items))
        if not page.next_page_token:
            return pages
        request = replace(request, page_token=page.next_page_token)


def test_pages_in_create_order_both_ways():
    coll = collection(sample(25))
    p = Paginator()
    asc = walk(p, coll, PageRequest(method="List", page_size=10))
    assert [len(x) for x in asc] == [10, 10, 5]
    assert [r.create_index for page in asc for r in page] == list(range(1, 26))
    desc = walk(p, coll, PageRequest(method="List", page_size=10, order_by="create_index desc"))
    assert [r.create_index for page in desc for r in page] == list(range(25, 0, -1))


def test_exact_multiple_of_page_size_ends_with_empty_token():
    coll = collection(sample(20))
    pages = walk(Paginator(), coll, PageRequest(method="List", page_size=10))
    assert [len(x) for x in pages] == [10, 10]


def test_namespace_prefix_scope_and_filter_are_applied():
    coll = collection(sample(60))
    flt = FILTERS.compile('status == "failed" && priority > 10')
    req = PageRequest(method="List", namespace="prod", prefix="e00", scope={"job_id": "job1"})
    got = [r for page in walk(Paginator(), coll, req, flt) for r in page]
    want = [r for r in sample(60) if r.namespace == "prod" and r.id.startswith("e00")
            and r.job_id == "job1" and r.status == "failed" and r.priority > 10]  # fmt: skip
    assert got == want and want


def test_contradictory_constraints_return_nothing():
    coll = collection(sample(10))
    page = Paginator().page(coll, PageRequest(method="L", namespace="prod"),
                            FILTERS.compile('namespace == "default"'))  # fmt: skip
    assert page.items == () and page.next_page_token == "" and page.examined == 0


def test_indexed_filter_examines_only_its_bucket():
    recs = sample(3000)
    coll = collection(recs)
    flt = FILTERS.compile('job_id == "job3" && status == "failed"')
    assert coll.plan(dict(flt.constraints)) in ("job_id", "status")
    page = Paginator().page(coll, PageRequest(method="L", page_size=5000), flt)
    assert page.examined <= 1000
    assert list(page.items) == [r for r in recs if r.job_id == "job3" and r.status == "failed"]


def test_scan_budget_bounds_work_and_still_reaches_everything():
    coll = collection(sample(100))
    flt = FILTERS.compile("priority >= 90")
    pages = walk(Paginator(), coll, PageRequest(method="Delete", page_size=50), flt,
                 scan_budget=7)  # fmt: skip
    assert sum(1 for page in pages if not page) > 0  # budget-limited pages may be empty
    assert [r.priority for page in pages for r in page] == list(range(90, 100))
    assert all(len(page) <= 7 for page in pages)


def test_scan_budget_counts_examined_candidates():
    coll = collection(sample(100))
    page = Paginator().page(coll, PageRequest(method="L", page_size=50),
                            FILTERS.compile("priority > 1000"), scan_budget=10)  # fmt: skip
    assert page.items == () and page.examined == 10 and page.next_page_token


def test_lookahead_avoids_a_trailing_empty_page():
    coll = collection(sample(30))
    p = Paginator(defaults=PagingDefaults(lookahead=64))
    page = p.page(coll, PageRequest(method="L", page_size=5), FILTERS.compile("priority < 5"))
    assert len(page.items) == 4 and page.next_page_token == ""


def test_tokens_are_bound_to_the_request():
    coll = collection(sample(30))
    p = Paginator(PageTokenCodec(b"cluster"))
    flt = FILTERS.compile('status == "pending"')
    first = p.page(coll, PageRequest(method="ListEvaluations", page_size=3), flt)
    token = first.next_page_token
    for req, matcher in [
        (PageRequest(method="ListJobs", page_size=3, page_token=token), flt),
        (PageRequest(method="ListEvaluations", page_size=4, page_token=token), flt),
        (PageRequest(method="ListEvaluations", page_size=3, page_token=token,
                     order_by="create_index desc"), flt),
        (PageRequest(method="ListEvaluations", page_size=3, page_token=token), None),
        (PageRequest(method="ListEvaluations", page_size=3, page_token=token,
                     namespace="default"), flt),
    ]:
        with pytest.raises(InvalidPageToken):
            p.page(coll, req, matcher)
    with pytest.raises(InvalidPageToken):
        Paginator(PageTokenCodec(b"other")).page(
            coll, PageRequest(method="ListEvaluations", page_size=3, page_token=token), flt
        )


def test_bad_page_size_is_invalid_argument():
    with pytest.raises(InvalidArgument) as err:
        Paginator().page(collection(), PageRequest(method="L", page_size=-3))
    assert err.value.metadata == {"field": "page_size"}


def test_count_uses_buckets_for_exact_equalities():
    recs = sample(300)
    coll = collection(recs)
    p = Paginator()
    for expr, pred in [
        ('status == "failed"', lambda r: r.status == "failed"),
        ('status in ["failed", "pending"] && job_id == "job2"',
         lambda r: r.status in ("failed", "pending") and r.job_id == "job2"),
        ("priority > 50", lambda r: r.priority > 50),
        ('status == "failed" && priority > 50', lambda r: r.status == "failed" and r.priority > 50),
        ("", lambda r: True),
    ]:  # fmt: skip
        flt = FILTERS.compile(expr)
        assert p.count(coll, flt) == sum(map(pred, recs)), expr
        assert p.count(coll, flt, namespace="prod") == sum(
            1 for r in recs if pred(r) and r.namespace == "prod"
        )
    assert coll.count({"status": frozenset({"failed"})}) == 100
    assert coll.count({"priority": frozenset({1})}) is None  # not indexed


def test_collection_upsert_moves_secondary_entries_and_remove():
    coll = collection()
    rec = Rec(1, "a", status="pending")
    assert coll.upsert(rec) is None
    assert coll.upsert(replace(rec, status="failed")) == rec
    assert coll.count({"status": frozenset({"pending"})}) == 0
    assert coll.count({"status": frozenset({"failed"})}) == 1
    assert coll.remove(Key(1, "a")) is not None and coll.remove(Key(1, "a")) is None
    assert len(coll) == 0 and coll.count({"status": frozenset({"failed"})}) == 0


# -- property: stable walks under concurrent writes ---------------------------

mutation = st.tuples(st.sampled_from(["insert", "delete", "update"]), st.integers(0, 10**6))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 60),
    page_size=st.sampled_from([1, 7, 1000]),
    descending=st.booleans(),
    expr=st.sampled_from(["", 'status == "pending"', "priority % 2 == 0",
                          'job_id in ["job1", "job2"]']),
    mutations=st.lists(st.lists(mutation, max_size=4), max_size=80),
)
def test_walk_returns_every_stable_item_exactly_once(n, page_size, descending, expr, mutations):
    coll = collection(sample(n))
    flt = FILTERS.compile(expr)
    next_index = n + 1
    deleted: set[Key] = set()
    changed: set[Key] = set()
    request = PageRequest(method="List", page_size=page_size,
                          order_by="create_index desc" if descending else "")  # fmt: skip
    seen: list[Key] = []
    rounds = iter(mutations)
    while True:
        page = Paginator().page(coll, request, flt)
        seen.extend(Key(r.create_index, r.id) for r in page.items)
        if not page.next_page_token:
            break
        request = replace(request, page_token=page.next_page_token)
        for op, pick in next(rounds, []):
            keys = [Key(r.create_index, r.id) for r in coll]
            if op == "insert":
                coll.upsert(Rec(next_index, f"new{next_index}", status=STATUSES[pick % 3],
                                priority=pick % 100, job_id=f"job{pick % 5}"))  # fmt: skip
                next_index += 1
            elif keys and op == "delete":
                key = keys[pick % len(keys)]
                coll.remove(key)
                deleted.add(key)
            elif keys:
                key = keys[pick % len(keys)]
                old = coll.get(key)
                assert old is not None
                coll.upsert(replace(old, status=STATUSES[pick % 3], priority=pick % 100))
                changed.add(key)
    assert len(seen) == len(set(seen)), "an item was returned twice"
    stable = {
        Key(r.create_index, r.id) for r in sample(n) if flt.matches(r)
    } - deleted - changed
    assert stable <= set(seen), "a stable item was skipped"
    assert seen == sorted(seen, reverse=descending)

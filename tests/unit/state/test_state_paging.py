"""Pure paging, tokens, filters and blocking-wait computation."""

from __future__ import annotations

import random

import pytest

from drover.api.types.v1 import evaluation_pb2
from drover.coord.keys import Keyspace
from drover.errors import InvalidArgument
from drover.paging.errors import InvalidPageToken
from drover.state import codec
from drover.state.blocking import BlockingConfig, blocking_wait
from drover.state.filtering import InvalidFilter, compile_filter, extract_equalities
from drover.state.query import Plan, Selection, page, page_size, parse_order
from drover.state.tables import Tables
from drover.state.tokens import TokenCodec

KEYS = codec.KeyCodec(Keyspace("/u"))
STATUSES = [evaluation_pb2.EVALUATION_STATUS_PENDING, evaluation_pb2.EVALUATION_STATUS_COMPLETE]


def _tables(n: int, seed: int = 1) -> tuple[Tables, dict[str, evaluation_pb2.Evaluation]]:
    rnd = random.Random(seed)
    tables = Tables(KEYS)
    evs = {}
    rev = 10
    for i in range(n):
        if rnd.random() < 0.3:
            rev += 1  # several evaluations per revision, like one txn
        ev = evaluation_pb2.Evaluation(
            id=f"{rnd.getrandbits(64):016x}", namespace=rnd.choice(["default", "ops"]),
            job_id=f"job{i % 7}", status=rnd.choice(STATUSES), type="service",
            priority=1 + i % 100,
        )
        evs[ev.id] = ev
        tables.apply(KEYS.key(codec.EVALUATIONS, ev.namespace, ev.id), codec.encode(ev), rev,
                     rev, False)
    return tables, evs


def _all_pages(tables: Tables, sel: Selection, descending: bool, size: int, budget: int) -> list:
    plan = Plan(tables[codec.EVALUATIONS], sel)
    out, cursor, calls = [], None, 0
    while True:
        res = page(plan, cursor, descending, size, budget)
        out.extend(h.msg.id for h in res.hits)
        calls += 1
        if res.next_cursor is None:
            return out
        cursor = res.next_cursor


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("budget", [3, 50_000])
def test_pages_cover_exactly_the_matching_set_in_order(descending: bool, budget: int) -> None:
    tables, evs = _tables(400)
    flt = compile_filter('status == "pending" && priority > 20', evaluation_pb2.Evaluation)
    got = _all_pages(tables, Selection("default", "", {}, flt), descending, 7, budget)
    want = [
        o[1].split("/")[1] for o in tables[codec.EVALUATIONS].order.iterate(None, descending)
        if evs[o[1].split("/")[1]].status == evaluation_pb2.EVALUATION_STATUS_PENDING
        and evs[o[1].split("/")[1]].priority > 20 and o[1].startswith("default/")
    ]
    assert got == want and len(want) > 20


def test_count_from_index_matches_a_scan() -> None:
    tables, evs = _tables(300)
    flt = compile_filter('status == "complete"', evaluation_pb2.Evaluation)
    plan = Plan(tables[codec.EVALUATIONS], Selection("*", "", {}, flt))
    assert plan.chosen == "status"
    want = sum(1 for e in evs.values() if e.status == evaluation_pb2.EVALUATION_STATUS_COMPLETE)
    assert plan.count() == want
    scoped = Plan(tables[codec.EVALUATIONS], Selection("ops", "", {"job_id": "job3"}, flt))
    assert scoped.count() == sum(
        1 for e in evs.values()
        if e.status == evaluation_pb2.EVALUATION_STATUS_COMPLETE and e.namespace == "ops"
        and e.job_id == "job3"
    )


def test_deleted_objects_leave_every_index() -> None:
    tables, evs = _tables(50)
    table = tables[codec.EVALUATIONS]
    for ev in list(evs.values())[:20]:
        tables.apply(KEYS.key(codec.EVALUATIONS, ev.namespace, ev.id), b"", 0, 999, True)
    assert len(table) == 30 and len(table.order) == 30
    assert sum(len(s) for s in table.secondary["status"].values()) == 30
    assert table.index == 999


def test_page_size_per_aip158() -> None:
    assert page_size(0) == 100 and page_size(5) == 5 and page_size(10**6) == 1000
    with pytest.raises(InvalidArgument) as err:
        page_size(-1)
    assert err.value.metadata["field"] == "page_size"


def test_order_by() -> None:
    assert parse_order("") is False and parse_order("create_index desc") is True
    with pytest.raises(InvalidArgument):
        parse_order("modify_index")


def test_tokens_are_bound_and_tamper_proof() -> None:
    codec_ = TokenCodec(b"k" * 32)
    token = codec_.encode((42, "default/abc"), "ctx1")
    assert codec_.decode(token, "ctx1") == (42, "default/abc")
    for bad, ctx in [(token, "ctx2"), (token[:-2] + "AA", "ctx1"), ("!!", "ctx1"),
                     (TokenCodec(b"x" * 32).encode((42, "a"), "ctx1"), "ctx1")]:
        with pytest.raises(InvalidPageToken) as err:
            codec_.decode(bad, ctx)
        assert err.value.reason == "INVALID_PAGE_TOKEN"


def test_filter_errors_say_where() -> None:
    with pytest.raises(InvalidFilter) as err:
        compile_filter("status == ", evaluation_pb2.Evaluation)
    assert err.value.reason == "INVALID_FILTER" and "1:11" in err.value.message
    with pytest.raises(InvalidFilter) as err:
        compile_filter('colour == "red"', evaluation_pb2.Evaluation)
    assert "colour" in err.value.message


def test_equality_extraction() -> None:
    assert extract_equalities('status == "pending" && job_id == "a&&b"') == (
        {"status": "pending", "job_id": "a&&b"}, True)
    assert extract_equalities('(status == "x" || priority == 1) && job_id == "j"') == (
        {"job_id": "j"}, False)


def test_blocking_wait() -> None:
    cfg = BlockingConfig(default_wait=300, max_wait=600)
    assert blocking_wait(0, 0.0, cfg) == 300
    assert blocking_wait(10, 0.0, cfg) == 10
    assert blocking_wait(10_000, 0.0, cfg) == 600
    assert blocking_wait(160, 0.999, cfg) == pytest.approx(160 + 10 * 0.999)
    with pytest.raises(InvalidArgument):
        blocking_wait(-1, 0.0, cfg)

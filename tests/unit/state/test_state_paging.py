"""Cache tables as a paging Source: records, indexes, fast filters, blocking waits."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from drover.api.types.v1 import evaluation_pb2
from drover.coord.keys import Keyspace
from drover.errors import InvalidArgument
from drover.filter import FilterCompiler, InvalidFilter
from drover.paging import InvalidPageToken, PageRequest, PageTokenCodec, Paginator
from drover.state.blocking import BlockingConfig, blocking_wait
from drover.state.core import codec, tables
from drover.state.core.tables import Tables

KEYS = codec.KeyCodec(Keyspace("/u"))
STATUSES = [evaluation_pb2.EVALUATION_STATUS_PENDING, evaluation_pb2.EVALUATION_STATUS_COMPLETE]
EVALS = codec.EVALUATIONS


def _tables(n: int, seed: int = 1) -> tuple[Tables, dict[str, evaluation_pb2.Evaluation]]:
    rnd = random.Random(seed)
    t = Tables(KEYS)
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
        t.apply(KEYS.key(EVALS, ev.namespace, ev.id), codec.encode(ev), rev, rev, False)
    return t, evs


def _compiler() -> FilterCompiler:
    return FilterCompiler(tables.SCHEMAS[EVALS], fast_fields=tables.record_getters(EVALS),
                          load=tables.decoder(EVALS))


def _walk(t: Tables, request: PageRequest, expr: str, budget: int | None = None) -> list[str]:
    flt, p = _compiler().compile(expr), Paginator(PageTokenCodec(b"k" * 32))
    out: list[str] = []
    while True:
        page = p.page(t[EVALS].rows, request, flt, scan_budget=budget)
        out.extend(str(e[2][1]).split("/")[1] for e in page.items)
        if not page.next_page_token:
            return out
        request = replace(request, page_token=page.next_page_token)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("budget", [3, None])
@pytest.mark.parametrize("expr", ['status == "pending" && priority > 20',
                                  "create_time.getSeconds() == 0 && priority > 20"])
def test_pages_cover_exactly_the_matching_set_in_order(
    descending: bool, budget: int | None, expr: str
) -> None:
    t, evs = _tables(400)
    order = "create_index desc" if descending else ""
    got = _walk(t, PageRequest("List", 7, order_by=order, namespace="default"), expr, budget)
    pending = "pending" in expr
    want = [
        k.id.split("/")[1] for k in t[EVALS].rows.keys(descending=descending)
        if (not pending or evs[k.id.split("/")[1]].status == STATUSES[0])
        and evs[k.id.split("/")[1]].priority > 20 and k.id.startswith("default/")
    ]
    assert got == want and len(want) > 20


def test_fast_path_is_used_for_record_fields_and_cel_otherwise() -> None:
    comp = _compiler()
    assert comp.compile('status == "pending" && priority > 20').fast is not None
    assert comp.compile('id.startsWith("a") || !(job_id in ["x"])').fast is not None
    assert comp.compile("create_time.getSeconds() == 0").fast is None  # CEL over the proto
    t, _ = _tables(200)
    slow = comp.compile('status == "pending" && priority > 20 && create_time.getSeconds() == 0')
    fast = comp.compile('status == "pending" && priority > 20')
    for e in t[EVALS].objects.values():
        assert slow.matches(e) == fast.matches(e)


def test_prefix_walks_the_id_index() -> None:
    t, evs = _tables(300)
    prefix = next(iter(evs))[:2]
    got = _walk(t, PageRequest("List", 5, namespace=None, prefix=prefix), "")
    want = [k.id.split("/")[1] for k in t[EVALS].rows.keys()
            if k.id.split("/")[1].startswith(prefix)]
    assert got == want and want
    got_desc = _walk(t, PageRequest("List", 2, order_by="create_index desc", namespace="ops",
                                    prefix=prefix), "")
    assert got_desc == [i for i in reversed(want) if evs[i].namespace == "ops"]


def test_count_from_index_and_scan_agree() -> None:
    t, evs = _tables(300)
    p = Paginator()
    exact = _compiler().compile('status == "complete"')
    want = sum(1 for e in evs.values() if e.status == STATUSES[1])
    assert t[EVALS].rows.plan({"status": frozenset({"complete"})}) == "status"
    assert p.count(t[EVALS].rows, exact, namespace=None) == want
    scoped = p.count(t[EVALS].rows, exact, namespace="ops", scope={"job_id": "job3"})
    assert scoped == sum(1 for e in evs.values() if e.status == STATUSES[1]
                         and e.namespace == "ops" and e.job_id == "job3")
    scan = _compiler().compile("priority >= 50")
    assert p.count(t[EVALS].rows, scan) == sum(1 for e in evs.values() if e.priority >= 50)


def test_deletes_and_updates_move_index_entries_without_decoding() -> None:
    t, evs = _tables(50)
    table = t[EVALS]
    ev = next(iter(evs.values()))
    ev.status = STATUSES[1] if ev.status == STATUSES[0] else STATUSES[0]
    t.apply(KEYS.key(EVALS, ev.namespace, ev.id), codec.encode(ev), 0, 500, False)
    moved = table.decode(f"{ev.namespace}/{ev.id}")
    assert moved is not None and moved.status == ev.status
    for e in list(evs.values())[:20]:
        t.apply(KEYS.key(EVALS, e.namespace, e.id), b"not a proto", 0, 999, True)
    assert len(table) == 30 and table.index == 999
    assert table.rows.count({"status": frozenset({"pending", "complete"})}) == 30


def test_tables_load_equals_incremental_apply() -> None:
    t, _ = _tables(120)
    kvs = [type("KV", (), {"key": KEYS.key(EVALS, *str(e[2][1]).split("/", 1)), "value": e[0],
                           "create_revision": e[2][0], "mod_revision": e[1]})()
           for e in t[EVALS].objects.values()]
    loaded = Tables(KEYS)
    loaded.stage(kvs[:50])
    loaded.stage(kvs[50:])
    loaded.load_staged()
    assert list(loaded[EVALS].rows.keys()) == list(t[EVALS].rows.keys())
    assert loaded[EVALS].objects == t[EVALS].objects


def test_token_binds_page_size_namespace_and_filter() -> None:
    t, _ = _tables(100)
    flt = _compiler().compile('status == "pending"')
    p = Paginator(PageTokenCodec(b"k" * 32))
    req = PageRequest("ListEvaluations", 5, namespace="default")
    token = p.page(t[EVALS].rows, req, flt).next_page_token
    for bad, field in [(replace(req, page_size=6), "page_size"),
                       (replace(req, namespace=None), "namespace"),
                       (replace(req, order_by="create_index desc"), "order_by")]:
        with pytest.raises(InvalidPageToken) as err:
            p.page(t[EVALS].rows, replace(bad, page_token=token), flt)
        assert err.value.metadata["mismatch"] == field
    with pytest.raises(InvalidPageToken):
        p.page(t[EVALS].rows, replace(req, page_token=token), _compiler().compile(""))


def test_filter_errors_name_the_field() -> None:
    with pytest.raises(InvalidFilter) as err:
        _compiler().compile("status == ")
    assert err.value.reason == "INVALID_FILTER" and err.value.metadata["column"] == "11"
    for expr, path in [('colour == "red"', "colour"), ('priority == "high"', "priority"),
                       ('status == "bogus"', "status")]:
        with pytest.raises(InvalidFilter) as err:
            _compiler().compile(expr)
        assert err.value.metadata["path"] == path, expr


def test_blocking_wait() -> None:
    cfg = BlockingConfig(default_wait=300, max_wait=600)
    assert blocking_wait(0, 0.0, cfg) == 300
    assert blocking_wait(10, 0.0, cfg) == 10
    assert blocking_wait(10_000, 0.0, cfg) == 600
    assert blocking_wait(160, 0.999, cfg) == pytest.approx(160 + 10 * 0.999)
    with pytest.raises(InvalidArgument):
        blocking_wait(-1, 0.0, cfg)


def test_stage_reads_every_kind_and_skips_what_is_not_an_object() -> None:
    """The staged list's per-kind fast path (a run of keys of one kind)
    gives what parsing each key gives, across kind boundaries, with the
    marker and foreign keys in between."""
    t, evs = _tables(40)
    def kv(key: bytes, value: bytes, create: int, mod: int) -> object:
        return type("KV", (), {"key": key, "value": value, "create_revision": create,
                               "mod_revision": mod})()
    job = codec.MESSAGES[codec.JOBS](id="web", namespace="ops")
    node = codec.MESSAGES[codec.NODES](id="n1")
    kvs = [kv(KEYS.key(codec.DEPLOYMENTS, "default", "d"),
              codec.encode(codec.MESSAGES[codec.DEPLOYMENTS](id="d", namespace="default")), 5, 6)]
    kvs += [kv(KEYS.key(EVALS, *str(e[2][1]).split("/", 1)), e[0], e[2][0], e[1])
            for e in sorted(t[EVALS].objects.values(), key=lambda e: e[2][1])]
    kvs.insert(3, kv(KEYS.key(EVALS, "only-a-namespace", "")[:-1], b"", 1, 1))  # no id part
    kvs += [kv(KEYS.key(codec.JOBS, "ops", "web"), codec.encode(job), 7, 8),
            kv(f"{KEYS.base}state/revision".encode(), b"", 3, 900),
            kv(KEYS.key(codec.NODES, codec.GLOBAL_NS, "n1"), codec.encode(node), 9, 9),
            kv(KEYS.base.encode() + b"unknown/x/y", b"", 1, 2)]
    loaded = Tables(KEYS)
    for i in range(0, len(kvs), 7):
        loaded.stage(kvs[i:i + 7])
    loaded.load_staged()
    assert loaded.marker_revision == 900 and loaded.revision == 900
    assert loaded[EVALS].objects == t[EVALS].objects
    assert list(loaded[EVALS].rows.keys()) == list(t[EVALS].rows.keys())
    got_job = loaded[codec.JOBS].decode("ops/web")
    got_node = loaded[codec.NODES].decode(f"{codec.GLOBAL_NS}/n1")
    assert got_job is not None and got_job.id == "web"
    assert got_node is not None and got_node.id == "n1"
    assert list(loaded[codec.DEPLOYMENTS].objects) == ["default/d"]
    assert len(evs) == 40

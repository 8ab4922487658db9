"""The cache's tables (:mod:`drover.state.core.tables`).

Decode once: a put the cache was told of while it was planned
(:meth:`Tables.expect_put`) is applied with the record read from the message,
with no parse of the key or the value -- and the entry is exactly the one a
parse of the bytes builds, for every kind, whatever the message became after
it was encoded, and only for an event of those very bytes.

Tables' memo of parsed object keys: every answer is KeyCodec.parse's,
and the memo never holds more than PARSED_KEYS keys however many distinct
keys are written (bounded memory).

Cache tables as a paging Source: records, indexes, fast filters."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from drover.api.types.v1 import evaluation_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.filter import FilterCompiler, InvalidFilter
from drover.paging import InvalidPageToken, PageRequest, PageTokenCodec, Paginator
from drover.state.core import codec, entries, tables
from drover.state.core.plan import PlanBuilder
from drover.state.core.tables import EXPECTED_MAX, PARSED_KEYS, Tables

# -- decode once ----------------------------------------------------------------

KEYS = codec.KeyCodec(Keyspace("/t/drover"))
FIELDS = entries.record_getters(codec.EVALUATIONS)


def _filled(kind: str, rnd: random.Random) -> Any:
    """A message of ``kind`` with random record fields, and its etcd-derived
    indexes set (what the encoding leaves out)."""
    msg: Any = codec.MESSAGES[kind]()
    for fd in msg.DESCRIPTOR.fields:
        if fd.is_repeated or fd.message_type is not None:
            continue
        if fd.type == fd.TYPE_STRING:
            setattr(msg, fd.name, rnd.choice(["", "a", "b-é", "default", "job-7"]))
        elif fd.type == fd.TYPE_ENUM:
            numbers = [v.number for v in fd.enum_type.values]
            setattr(msg, fd.name, rnd.choice([*numbers, 97]))  # 97: not a declared value
        elif fd.type == fd.TYPE_BOOL:
            setattr(msg, fd.name, rnd.random() < 0.5)
        elif fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
            setattr(msg, fd.name, rnd.choice([0.0, 1.5, -2.25]))
        elif fd.cpp_type in (fd.CPPTYPE_INT32, fd.CPPTYPE_INT64):
            setattr(msg, fd.name, rnd.choice([0, 1, -3, 1000]))
        elif fd.cpp_type in (fd.CPPTYPE_UINT32, fd.CPPTYPE_UINT64):
            setattr(msg, fd.name, rnd.choice([0, 1, 1000]))
    for name in ("create_index", "modify_index", "job_modify_index"):
        if name in msg.DESCRIPTOR.fields_by_name:
            setattr(msg, name, rnd.randint(1, 10_000))
    if "namespace" in msg.DESCRIPTOR.fields_by_name:
        msg.namespace = rnd.choice(["default", "ops"])
    return msg


def _where(kind: str, msg: Any, i: int) -> tuple[str, str]:
    ns = codec.namespace_of(kind, msg)
    oid = codec.SCHEDULER_CONFIG_ID if kind == codec.SCHEDULER_CONFIG else f"o{i}"
    if kind == codec.JOB_VERSIONS:
        oid = f"o{i}/{msg.version:020d}"
    return ns, oid


def _put(t: Tables, kind: str, ns: str, oid: str, value: bytes, rev: int) -> entries.Entry:
    key = KEYS.key(kind, ns, oid)
    got = t.apply(key, value, rev, rev, False)
    assert got is not None and got[0] == KEYS.parse(key)
    return t[kind].objects[f"{ns}/{oid}"]


@pytest.mark.parametrize("kind", sorted(codec.MESSAGES))
def test_an_expected_put_is_the_entry_a_parse_builds(kind: str) -> None:
    rnd = random.Random(kind)
    told, parsed = Tables(KEYS), Tables(KEYS)
    for i in range(200):
        msg = _filled(kind, rnd)
        ns, oid = _where(kind, msg, i)
        key, value = KEYS.key(kind, ns, oid), codec.encode(msg)
        told.expect_put(key, value, kind, ns, oid, msg)
        assert told._parse(key) == KEYS.parse(key)
        got, want = (_put(t, kind, ns, oid, value, 10 + i) for t in (told, parsed))
        assert got == want
        # Same types too: a bool read as 1 (or 1 as True) would be equal, yet wrong.
        assert [type(v) for v in got] == [type(v) for v in want]
        assert not told._expected  # used once, then gone


def _eval(i: int, status: int = EvaluationStatus.EVALUATION_STATUS_PENDING) -> Evaluation:
    return Evaluation(id=f"e{i}", namespace="default", job_id=f"j{i}", type="service",
                      priority=50, status=status)  # type: ignore[arg-type]


def test_the_record_is_read_when_the_message_is_encoded() -> None:
    """A planner that changes a message after putting it cannot make the
    cache index anything but the bytes it wrote."""
    t = Tables(KEYS)
    plan = PlanBuilder(KEYS, t.expect_put)
    ev = _eval(1)
    plan.put(codec.EVALUATIONS, "default", "e1", ev, 0)
    ev.status = EvaluationStatus.EVALUATION_STATUS_FAILED
    ev.job_id = "other"
    (op,) = plan.ops
    assert isinstance(op, Put)
    t.apply(op.key, op.value, 5, 5, False)
    entry = t[codec.EVALUATIONS].objects["default/e1"]
    assert entry[0] is op.value
    assert FIELDS["status"](entry) == "pending"
    assert FIELDS["job_id"](entry) == "j1"


def test_an_event_of_other_bytes_is_parsed() -> None:
    """Another writer's put of the key (or a re-planned one) is not applied
    with this plan's record."""
    t = Tables(KEYS)
    key = KEYS.key(codec.EVALUATIONS, "default", "e1")
    mine = _eval(1)
    t.expect_put(key, codec.encode(mine), codec.EVALUATIONS, "default", "e1", mine)
    theirs = _eval(1, EvaluationStatus.EVALUATION_STATUS_COMPLETE)
    theirs.job_id = "theirs"
    t.apply(key, codec.encode(theirs), 5, 5, False)
    entry = t[codec.EVALUATIONS].objects["default/e1"]
    assert (FIELDS["status"](entry), FIELDS["job_id"](entry)) == ("complete", "theirs")
    assert len(t[codec.EVALUATIONS].candidates("job_id", "j1")) == 0


def test_a_namespace_with_a_slash_is_not_expected() -> None:
    """The remembered parse must be what KeyCodec.parse reads back; a
    namespace with a "/" (refused by validation anyway) would split elsewhere."""
    t = Tables(KEYS)
    key = KEYS.key(codec.EVALUATIONS, "a/b", "e1")
    ev = _eval(1)
    t.expect_put(key, codec.encode(ev), codec.EVALUATIONS, "a/b", "e1", ev)
    assert not t._expected and t._parse(key) == KEYS.parse(key)


def test_expectations_are_bounded() -> None:
    """Plans never committed leave expectations behind: they stay bounded."""
    t = Tables(KEYS)
    ev = _eval(1)
    value = codec.encode(ev)
    for i in range(EXPECTED_MAX * 2 + 3):
        t.expect_put(KEYS.key(codec.EVALUATIONS, "default", f"e{i}"), value,
                     codec.EVALUATIONS, "default", f"e{i}", ev)
        assert len(t._expected) <= EXPECTED_MAX
    assert len(t._parsed) <= tables.PARSED_KEYS


# -- the key-parse memo ---------------------------------------------------------

KEYS = codec.KeyCodec(Keyspace("/t/drover"))


def test_parses_are_the_codecs_and_the_memo_stays_bounded() -> None:
    tables = Tables(KEYS)
    value = evaluation_pb2.Evaluation(id="x", namespace="default", type="service")
    keys = [KEYS.key(codec.EVALUATIONS, "default", f"e{i}") for i in range(2 * PARSED_KEYS + 7)]
    others = [b"/t/drover/nope/default/x", b"/elsewhere/evaluations/default/x"]
    rev = 0
    for key in [*keys, *keys[:10], *others]:  # the first ones again, after a clear
        rev += 1
        got = tables.apply(key, value.SerializeToString(), rev, rev, False)
        want = KEYS.parse(key)
        assert (got[0] if got else None) == want
        assert tables._parse(key) == want
        assert len(tables._parsed) <= PARSED_KEYS
    assert len(tables[codec.EVALUATIONS]) == len(keys)


# -- tables as a paging source --------------------------------------------------

PAGED_KEYS = codec.KeyCodec(Keyspace("/u"))
STATUSES = [evaluation_pb2.EVALUATION_STATUS_PENDING, evaluation_pb2.EVALUATION_STATUS_COMPLETE]
EVALS = codec.EVALUATIONS


def _tables(n: int, seed: int = 1) -> tuple[Tables, dict[str, evaluation_pb2.Evaluation]]:
    rnd = random.Random(seed)
    t = Tables(PAGED_KEYS)
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
        t.apply(PAGED_KEYS.key(EVALS, ev.namespace, ev.id), codec.encode(ev), rev, rev, False)
    return t, evs


def _compiler() -> FilterCompiler:
    return FilterCompiler(entries.SCHEMAS[EVALS], fast_fields=entries.record_getters(EVALS),
                          load=entries.decoder(EVALS))


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
    t.apply(PAGED_KEYS.key(EVALS, ev.namespace, ev.id), codec.encode(ev), 0, 500, False)
    moved = table.decode(f"{ev.namespace}/{ev.id}")
    assert moved is not None and moved.status == ev.status
    for e in list(evs.values())[:20]:
        t.apply(PAGED_KEYS.key(EVALS, e.namespace, e.id), b"not a proto", 0, 999, True)
    assert len(table) == 30 and table.index == 999
    assert table.rows.count({"status": frozenset({"pending", "complete"})}) == 30


def test_tables_load_equals_incremental_apply() -> None:
    t, _ = _tables(120)
    kvs = [type("KV", (), {"key": PAGED_KEYS.key(EVALS, *str(e[2][1]).split("/", 1)), "value": e[0],
                           "create_revision": e[2][0], "mod_revision": e[1]})()
           for e in t[EVALS].objects.values()]
    loaded = Tables(PAGED_KEYS)
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
    kvs = [kv(PAGED_KEYS.key(codec.DEPLOYMENTS, "default", "d"),
              codec.encode(codec.MESSAGES[codec.DEPLOYMENTS](id="d", namespace="default")), 5, 6)]
    kvs += [kv(PAGED_KEYS.key(EVALS, *str(e[2][1]).split("/", 1)), e[0], e[2][0], e[1])
            for e in sorted(t[EVALS].objects.values(), key=lambda e: e[2][1])]
    kvs.insert(3, kv(PAGED_KEYS.key(EVALS, "only-a-namespace", "")[:-1], b"", 1, 1))  # no id part
    kvs += [kv(PAGED_KEYS.key(codec.JOBS, "ops", "web"), codec.encode(job), 7, 8),
            kv(f"{PAGED_KEYS.base}state/revision".encode(), b"", 3, 900),
            kv(PAGED_KEYS.key(codec.NODES, codec.GLOBAL_NS, "n1"), codec.encode(node), 9, 9),
            kv(PAGED_KEYS.base.encode() + b"unknown/x/y", b"", 1, 2)]
    loaded = Tables(PAGED_KEYS)
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

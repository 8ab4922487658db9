"""Decode once: a put the cache was told of while it was planned
(:meth:`Tables.expect_put`) is applied with the record read from the message,
with no parse of the key or the value -- and the entry is exactly the one a
parse of the bytes builds, for every kind, whatever the message became after
it was encoded, and only for an event of those very bytes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.state.core import codec, tables
from drover.state.core.plan import PlanBuilder
from drover.state.core.tables import EXPECTED_MAX, Tables

KEYS = codec.KeyCodec(Keyspace("/t/drover"))
FIELDS = tables.record_getters(codec.EVALUATIONS)


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


def _put(t: Tables, kind: str, ns: str, oid: str, value: bytes, rev: int) -> tables.Entry:
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

"""The compiled record extractors read exactly what the filter schema's
getters read, for every kind, with strings shared per distinct value."""

from __future__ import annotations

import random

import pytest

from drover.state.core import codec, entries
from drover.state.core.records import record_maker


def _filled(kind: str, rnd: random.Random) -> object:
    msg = codec.MESSAGES[kind]()
    for name in entries.RECORDS[kind]:
        fd = msg.DESCRIPTOR.fields_by_name.get(name)
        if fd is None or fd.is_repeated:
            continue
        if fd.type == fd.TYPE_STRING:
            setattr(msg, name, rnd.choice(["", "a", "b-é", "default"]))
        elif fd.type == fd.TYPE_ENUM:
            assert fd.enum_type is not None  # an enum field names its enum
            numbers = [v.number for v in fd.enum_type.values]
            setattr(msg, name, rnd.choice([*numbers, 97]))  # 97: not a declared value
        elif fd.type == fd.TYPE_BOOL:
            setattr(msg, name, rnd.random() < 0.5)
        elif fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
            setattr(msg, name, rnd.choice([0.0, 1.5]))
        elif fd.cpp_type in (fd.CPPTYPE_INT32, fd.CPPTYPE_INT64, fd.CPPTYPE_UINT32,
                             fd.CPPTYPE_UINT64):
            setattr(msg, name, rnd.choice([0, 1, 2, 100, 1000]))
    if hasattr(msg, "namespace"):
        msg.namespace = rnd.choice(["default", "ops"])
    if hasattr(msg, "id"):
        msg.id = rnd.choice(["x", "y"])
    return msg


@pytest.mark.parametrize("kind", sorted(codec.MESSAGES))
def test_record_maker_reads_what_the_schema_reads(kind: str) -> None:
    rnd = random.Random(kind)
    getters = entries._extractors(kind)
    make = record_maker(codec.MESSAGES[kind].DESCRIPTOR, entries.RECORDS[kind], getters)
    for _ in range(200):
        msg = _filled(kind, rnd)
        got, want = make(msg), tuple(get(msg) for get in getters)
        assert got == want
        # Same types too: a bool read as 1 (or 1 as True) would be equal, yet wrong.
        assert [type(v) for v in got] == [type(v) for v in want]


def test_record_strings_are_shared_per_value() -> None:
    kind = codec.EVALUATIONS
    make = record_maker(codec.MESSAGES[kind].DESCRIPTOR, entries.RECORDS[kind],
                        entries._extractors(kind))
    a = codec.MESSAGES[kind](namespace="".join(["de", "fault"]), job_id="job-" + str(7))
    b = codec.MESSAGES[kind](namespace="default", job_id="job-7")
    ra, rb = make(a), make(b)
    assert ra[0] is rb[0] and ra[1] is rb[1]

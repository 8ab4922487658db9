"""Hypothesis strategies derived from protobuf descriptors.

:func:`messages` builds a strategy for any message type from its descriptor
alone, so a new field or RPC is fuzzed without touching this file. Every
field type gets ordinary values *and* the boundaries that broke things
before: 0/-1/the type's extremes, unknown enum numbers, out-of-range
Durations and Timestamps, ids with bad characters, strings of 129, 5,000
and 1,000,000 characters, NaN and infinities, repeated fields past their
caps. Nesting follows the schema (depth-capped should a type ever become
recursive); :func:`raw_bodies` adds bytes that are no message at all,
including groups nested thousands deep.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import strategies as st

_T = FieldDescriptor

INT32 = (0, 1, -1, 50, 100, 101, 127, 128, 256, 257, 1000, 1001, 2**31 - 1, -(2**31))
UINT32 = (0, 1, 2, 256, 257, 2**32 - 1)
UINT64 = (0, 1, 2, 2**31, 2**63 - 1, 2**63, 2**64 - 1)
INT64 = (0, 1, -1, 2**63 - 1, -(2**63))
DOUBLES = (0.0, -0.0, 1.5, -1.0, float("nan"), float("inf"), float("-inf"), 1e308)
HUGE = 1_000_000

_WORDS = st.sampled_from([
    "", "default", "*", "a", "web", "job-1", "dc1", "service", "batch", "_core",
    "pending", "create_index", "create_index desc", "x" * 128, "x" * 129, "a b",
    "../etc", "a/b", "\x00", "é", "💥", "' OR 1=1 --",
])
_FILTERS = st.sampled_from([
    'status == "pending"', "1/0 == 1", 'job_id.matches("(")', "status ==",
    "nope == 1", "priority > 50 && priority < 10", "job_id", "true", "(" * 200,
    '"' + "a" * 5000 + '"', "priority == 1" + " || priority == 1" * 300,
])


def strings(name: str) -> st.SearchStrategy[str]:
    base = st.one_of(_WORDS, st.text(max_size=12))
    if name == "filter":
        base = st.one_of(_FILTERS, base)
    sizes = st.sampled_from([129, 5000, 70_000, HUGE]).map(lambda n: "x" * n)
    return st.one_of(base, base, base, sizes)


_SANE_STRINGS = st.sampled_from(["", "default", "web", "job-1", "a", "dc1", "service"])
_SANE_FILTERS = st.sampled_from(["", 'status == "pending"', "priority > 10",
                                 'job_id.startsWith("job")', 'namespace == "default"'])


def _sane(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Values a well-behaved client sends."""
    t = fd.type
    if t == _T.TYPE_STRING:
        if fd.name == "filter":
            return _SANE_FILTERS
        if fd.name == "order_by":
            return st.sampled_from(["", "create_index", "create_index desc"])
        return _SANE_STRINGS
    if t == _T.TYPE_ENUM:
        assert fd.enum_type is not None
        return st.sampled_from([v.number for v in fd.enum_type.values])
    if t == _T.TYPE_BOOL:
        return st.booleans()
    if t == _T.TYPE_BYTES:
        return st.just(b"")
    if t in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
        return st.sampled_from([0.0, 1.5])
    return st.sampled_from([0, 1, 2, 3, 50])


def _scalar(fd: FieldDescriptor, plausible: bool = False) -> st.SearchStrategy[Any]:
    if plausible:
        # Mostly sane, now and then one hostile value among them.
        return st.one_of(*[_sane(fd)] * 15, _scalar(fd))
    t = fd.type
    if t == _T.TYPE_STRING:
        return strings(fd.name)
    if t == _T.TYPE_BYTES:
        return st.one_of(st.binary(max_size=16), st.just(b"\x00" * 70_000))
    if t == _T.TYPE_BOOL:
        return st.booleans()
    if t == _T.TYPE_ENUM:
        assert fd.enum_type is not None
        defined = [v.number for v in fd.enum_type.values]
        return st.one_of(st.sampled_from(defined), st.sampled_from([-1, 99, 2**31 - 1]))
    if t in (_T.TYPE_INT32, _T.TYPE_SINT32, _T.TYPE_SFIXED32):
        return st.one_of(st.sampled_from(INT32), st.integers(-(2**31), 2**31 - 1))
    if t in (_T.TYPE_UINT32, _T.TYPE_FIXED32):
        return st.one_of(st.sampled_from(UINT32), st.integers(0, 2**32 - 1))
    if t in (_T.TYPE_UINT64, _T.TYPE_FIXED64):
        return st.one_of(st.sampled_from(UINT64), st.integers(0, 2**64 - 1))
    if t in (_T.TYPE_INT64, _T.TYPE_SINT64, _T.TYPE_SFIXED64):
        return st.one_of(st.sampled_from(INT64), st.integers(-(2**63), 2**63 - 1))
    if t in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
        return st.one_of(st.sampled_from(DOUBLES), st.floats(allow_nan=True))
    raise AssertionError(f"no strategy for field type {t} ({fd.full_name})")


def _well_known(desc: Descriptor, plausible: bool
                ) -> st.SearchStrategy[dict[str, int]] | None:
    if plausible and desc.full_name in ("google.protobuf.Duration",
                                        "google.protobuf.Timestamp"):
        sane = st.fixed_dictionaries({"seconds": st.sampled_from([0, 1, 2]),
                                      "nanos": st.sampled_from([0, 100_000_000])})
        if desc.full_name == "google.protobuf.Timestamp":
            sane = st.fixed_dictionaries({"seconds": st.just(1_700_000_000),
                                          "nanos": st.just(0)})
        hostile = _well_known(desc, False)
        assert hostile is not None
        return st.one_of(*[sane] * 15, hostile)
    if desc.full_name == "google.protobuf.Duration":
        seconds = st.sampled_from([0, 1, 2, -1, 3600, 315_576_000_000, 315_576_000_001,
                                   2**63 - 1, -(2**63)])
        nanos = st.sampled_from([0, 1, 500_000_000, 999_999_999, 1_000_000_000, -1,
                                 2**31 - 1])
        return st.fixed_dictionaries({"seconds": seconds, "nanos": nanos})
    if desc.full_name == "google.protobuf.Timestamp":
        seconds = st.sampled_from([0, 1_700_000_000, -62_135_596_800, -62_135_596_801,
                                   253_402_300_799, 253_402_300_800, 2**63 - 1, -(2**63)])
        nanos = st.sampled_from([0, 999_999_999, 1_000_000_000, -1])
        return st.fixed_dictionaries({"seconds": seconds, "nanos": nanos})
    return None


def _repeated(fd: FieldDescriptor, item: st.SearchStrategy[Any], plausible: bool
              ) -> st.SearchStrategy[list[Any]]:
    few = st.lists(item, max_size=3)
    if plausible:
        return few
    # Past the caps (128 per etcd txn, 256 per broker batch, 1024 per
    # field), with small elements so the request stays a few MB at most.
    if fd.type == _T.TYPE_MESSAGE:
        assert fd.message_type is not None
        small: st.SearchStrategy[Any] = st.just(GetMessageClass(fd.message_type)())
    elif fd.type == _T.TYPE_STRING:
        small = _WORDS
    else:
        small = item
    many = st.tuples(small, st.sampled_from([128, 257, 1025])).map(lambda p: [p[0]] * p[1])
    return st.one_of(few, few, few, many)


def messages(desc: Descriptor, depth: int = 0, max_depth: int = 8, *,
             plausible: bool = False) -> st.SearchStrategy[Message]:
    """A strategy for messages of type ``desc``: hostile (boundary values
    everywhere) or ``plausible`` (what a client sends, with now and then one
    hostile value, so that checks deep inside handlers are reached too)."""
    cls = GetMessageClass(desc)
    wk = _well_known(desc, plausible)
    if wk is not None:
        return wk.map(lambda kw: cls(**kw))
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for fd in desc.fields:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            kfd = fd.message_type.fields_by_name["key"]
            vfd = fd.message_type.fields_by_name["value"]
            value = (_message_value(vfd, depth, max_depth, plausible)
                     if vfd.type == _T.TYPE_MESSAGE else _scalar(vfd, plausible))
            fields[fd.name] = st.dictionaries(_scalar(kfd, plausible), value, max_size=3)
            continue
        if fd.type == _T.TYPE_MESSAGE:
            if depth >= max_depth:
                continue
            item = _message_value(fd, depth, max_depth, plausible)
        else:
            item = _scalar(fd, plausible)
        fields[fd.name] = _repeated(fd, item, plausible) if fd.is_repeated else item

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        msg = cls()
        for name, strategy in fields.items():
            if not draw(st.booleans()):
                continue  # unset: the common case for most fields
            value = draw(strategy)
            fd = desc.fields_by_name[name]
            if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                target = getattr(msg, name)
                for k, v in value.items():
                    if isinstance(v, Message):
                        target[k].CopyFrom(v)
                    else:
                        target[k] = v
            elif fd.is_repeated:
                target = getattr(msg, name)
                if fd.type == _T.TYPE_MESSAGE:
                    for v in value:
                        target.add().CopyFrom(v)
                else:
                    target.extend(value)
            elif fd.type == _T.TYPE_MESSAGE:
                getattr(msg, name).CopyFrom(value)
            else:
                setattr(msg, name, value)
        return msg

    return build()


def _message_value(fd: FieldDescriptor, depth: int, max_depth: int, plausible: bool
                   ) -> st.SearchStrategy[Any]:
    desc = fd.message_type
    assert desc is not None
    return st.deferred(lambda: messages(desc, depth + 1, max_depth, plausible=plausible))


def raw_bodies() -> st.SearchStrategy[bytes]:
    """Request bodies that are not a valid message of any type."""
    return st.one_of(
        st.binary(max_size=64),
        st.just(b"\xff" * 16),
        st.just(b"\x0a\xff\xff\xff\xff\x0f"),  # a length far past the end
        st.sampled_from([2_000, 20_000]).map(lambda n: b"\xfb\x07" * n),  # nested groups
        st.sampled_from([200, 2_000]).map(_nested_lengths),
    )


def _nested_lengths(depth: int) -> bytes:
    """Field 1 length-delimited, nested ``depth`` deep (valid wire format)."""
    body = b""
    for _ in range(depth):
        body = b"\x0a" + _varint(len(body)) + body
    return body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

"""Property test of the accept-only fast path (hypothesis, shrinking): for
generated messages of every drover request type, the fast check never
vouches for a message the field walk refuses, and never changes it.

Complements the seeded test in test_validation_accept.py: every request
type gets its own examples, each message holds at most ONE bad choice, the
string caps are the real ones (ids of 128/129 characters, 8 KiB strings,
4 KiB filters), values sit on the boundaries the walk tests (timestamp and
duration ends, int64 end, priority 100/101, enum numbers one past the
last), nesting goes one level past a small ``max_depth`` (the fast check's
depth guard, plain and for messages with inline timestamps), and
hypothesis shrinks a counterexample to its one bad field. Each of those
checks, weakened in accept.py, makes this test fail (checked by hand when
written: priority, bytes cap, non-finite floats, maps, repeated cap, id
pattern, enum range, both depth guards)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.errors import InvalidArgument
from drover.validation import Limits
from drover.validation.accept import acceptor
from drover.validation.fields import _walk

_T = FieldDescriptor
#: The default string caps; small repeated/map/depth caps so they are crossed.
LIMITS = Limits(max_repeated=3, max_map_entries=2, max_depth=2)

REQUESTS = sorted((d for module in (acl_pb2, broker_pb2, deployments_pb2, proxy_pb2, state_pb2)
                   for d in module.DESCRIPTOR.message_types_by_name.values()),
                  key=lambda d: d.full_name)

#: (good, bad) values per kind: "bad" ones are refused by some field's check
#: (an id of 129 characters is a fine 129-character type name).
STRINGS = (["", "a", "e-1_.X", "a" * 128, "x" * 4096, "x" * 8192],
           ["*", "a" * 129, "a b", "a\n", "a/b", "\u00e9", "-\u0661", "x" * 4097, "x" * 8193,
            "x" * 65537])
BYTES = ([b"", b"ab", b"x" * 65536], [b"x" * 65537])
INT32 = ([0, 1, 50, 100, 2**31 - 1], [101, -1, -(2**31)])
UINT64 = ([0, 7, 2**63 - 1], [2**63, 2**64 - 1])
FLOATS = ([0.0, -2.5, 1e300], [math.nan, math.inf, -math.inf])
SECONDS = ([0, 1, 253_402_300_799], [-1, 253_402_300_800, -62_135_596_800, -62_135_596_801,
                                     315_576_000_000, 315_576_000_001])
NANOS = ([0, 1, 999_999_999], [1_000_000_000, -1])
COUNTS = ([0, 1, LIMITS.max_repeated], [LIMITS.max_repeated + 1])


class _Draw:
    """``draw`` with a budget of ONE bad value per message: a message with
    one bad value is where an over-eager fast check would show (several bad
    values are refused by both whichever check is wrong)."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.bad_left = 1

    def __call__(self, strategy: Any) -> Any:
        return self.draw(strategy)

    def bad(self) -> bool:
        if self.bad_left and self.draw(st.integers(0, 7)) == 0:
            self.bad_left = 0
            return True
        return False


def _pick(draw: Any, values: tuple[list[Any], list[Any]]) -> Any:
    """A good value, or (once per message) a bad one."""
    return draw(st.sampled_from(values[1] if draw.bad() else values[0]))


def _scalar(draw: Any, fd: FieldDescriptor) -> Any:
    t = fd.type
    if t == _T.TYPE_STRING:
        return _pick(draw, STRINGS)
    if t == _T.TYPE_BYTES:
        return _pick(draw, BYTES)
    if t == _T.TYPE_ENUM:
        assert fd.enum_type is not None
        known = sorted(fd.enum_type.values_by_number)
        return _pick(draw, (known, [known[-1] + 1, -1, 2**31 - 1]))
    if t == _T.TYPE_BOOL:
        return draw(st.booleans())
    if t in (_T.TYPE_UINT64, _T.TYPE_FIXED64):
        return _pick(draw, UINT64)
    if t in (_T.TYPE_UINT32, _T.TYPE_FIXED32):
        return draw(st.sampled_from([0, 1, 2**32 - 1]))
    if t in (_T.TYPE_INT64, _T.TYPE_SINT64, _T.TYPE_SFIXED64):
        return draw(st.sampled_from([0, -3, 2**63 - 1, -(2**63)]))
    if t in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
        return _pick(draw, FLOATS if t == _T.TYPE_DOUBLE else ([0.0, -2.5], FLOATS[1]))
    return _pick(draw, INT32)


def _fill(draw: Any, msg: Any, depth: int) -> None:
    d: Descriptor = msg.DESCRIPTOR
    if d.full_name in ("google.protobuf.Duration", "google.protobuf.Timestamp"):
        msg.seconds, msg.nanos = _pick(draw, SECONDS), _pick(draw, NANOS)
        return
    for fd in d.fields:
        if not draw(st.integers(0, 2)):  # about a third of the fields left unset
            continue
        sub = fd.message_type
        if sub is not None and sub.GetOptions().map_entry:
            if not draw.bad():
                continue  # any entry is left to the walk: a map is one bad choice
            m = getattr(msg, fd.name)
            key_fd, val_fd = sub.fields_by_name["key"], sub.fields_by_name["value"]
            key = _pick(draw, STRINGS) if key_fd.type == _T.TYPE_STRING else _pick(draw, INT32)
            if val_fd.message_type is not None:
                _fill(draw, m[key], depth + 1)
            else:
                m[key] = _scalar(draw, val_fd)
        elif sub is not None:
            if depth >= LIMITS.max_depth and not draw.bad():
                continue  # one level past the limit: a bad choice too
            if fd.is_repeated:
                for _ in range(_pick(draw, COUNTS)):
                    _fill(draw, getattr(msg, fd.name).add(), depth + 1)
            else:
                child = getattr(msg, fd.name)
                child.SetInParent()
                _fill(draw, child, depth + 1)
        elif fd.is_repeated:
            n = _pick(draw, COUNTS)
            getattr(msg, fd.name).extend(_scalar(draw, fd) for _ in range(n))
        else:
            setattr(msg, fd.name, _scalar(draw, fd))


@st.composite
def requests(draw: Any, descriptor: Any) -> Any:
    msg = descriptor._concrete_class()
    _fill(_Draw(draw), msg, 0)
    return msg


def _walk_accepts(msg: Any) -> bool:
    try:
        _walk(msg, LIMITS)
    except InvalidArgument:
        return False
    return True


@pytest.mark.parametrize("descriptor", REQUESTS, ids=lambda d: d.name)
@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fast_check_vouches_only_for_what_the_walk_accepts(descriptor: Descriptor,
                                                           data: Any) -> None:
    msg = data.draw(requests(descriptor))
    before = msg.SerializeToString()
    vouched = acceptor(msg.DESCRIPTOR, LIMITS)(msg, 0)
    assert msg.SerializeToString() == before  # read only
    if vouched:
        assert _walk_accepts(msg), msg

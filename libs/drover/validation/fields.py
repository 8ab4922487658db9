"""Every field of a request, checked before any handler reads it.

:func:`check_request` walks a protobuf message by its descriptor and raises
:class:`~drover.errors.InvalidArgument` (ErrorInfo metadata ``field``: the
path, e.g. ``acks[3].status``) at the first value no handler could use:

* an enum number the enum does not define (proto3 keeps unknown numbers,
  so ``Name()`` or a table lookup would raise further in);
* a ``Duration`` or ``Timestamp`` outside the range protobuf defines
  (``ToTimedelta``/``ToDatetime`` raise ``OverflowError`` past it), a
  negative duration (every duration drover takes is a wait or a deadline);
* an unsigned integer above the int64 range (every index is an etcd
  revision, an int64, and etcd refuses larger ones), a count-like int32
  below zero, a float that is not finite;
* a string or bytes value longer than its cap, an id, namespace or key
  that is not 1-128 of ``[A-Za-z0-9-_.]`` (empty is left to the handler,
  which knows whether the field is required);
* a repeated field or map with more entries than its cap.

The walk knows fields by name, so one table covers every service: ``id``,
``*_id`` and ``*_ids`` are ids wherever they appear. Protos are not
recursive, so the walk's depth is bounded by the schema; ``max_depth`` is
a guard should one become so.

The walk is compiled once per message type (a check per field number,
each a closure with its caps bound) and builds a field's path only when
it refuses it: every request of every service goes through here.

Pure: protobuf descriptors only, no gRPC, no asyncio. Messages are
checked, never changed; unknown fields (a newer client's) are left alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from drover.errors import InvalidArgument, clip
from drover.validation.accept import acceptor
from drover.validation.limits import (
    DEFAULT_LIMITS,
    DURATION_MAX_SECONDS,
    ID_CHARS,
    INT64_MAX,
    NON_NEGATIVE,
    TIMESTAMP_MAX_SECONDS,
    TIMESTAMP_MIN_SECONDS,
    Limits,
    is_id_field,
    string_cap,
)

__all__ = ["check_request"]

_T = FieldDescriptor


def _invalid(path: str, what: str) -> InvalidArgument:
    return InvalidArgument(f"{clip(path, 200)}: {what}", metadata={"field": clip(path, 200)})


def _check_id(path: str, value: str, limits: Limits, *, namespace: bool = False) -> None:
    if not value or (namespace and value == "*"):
        return
    if len(value) > limits.max_id or not set(value) <= ID_CHARS:
        raise _invalid(path, f"{value[:40]!r}{'...' if len(value) > 40 else ''} is not a "
                       f"valid {'namespace' if namespace else 'id'}: use 1-{limits.max_id} "
                       "letters, digits, '-', '_' or '.'")


def _check_string(path: str, name: str, value: str, limits: Limits) -> None:
    if name == "namespace":
        _check_id(path, value, limits, namespace=True)
    elif is_id_field(name) or name == "prefix":
        _check_id(path, value, limits)
    else:
        cap = string_cap(name, limits)
        if len(value) > cap:
            raise _invalid(path, f"is {len(value)} characters long; at most {cap}")


def _check_scalar(path: str, fd: FieldDescriptor, value: Any, limits: Limits) -> None:
    t = fd.type
    if t == _T.TYPE_STRING:
        _check_string(path, fd.name, value, limits)
    elif t == _T.TYPE_BYTES:
        if len(value) > limits.max_bytes:
            raise _invalid(path, f"is {len(value)} bytes long; at most {limits.max_bytes}")
    elif t == _T.TYPE_ENUM:
        enum = fd.enum_type
        assert enum is not None
        if enum.values_by_number.get(value) is None:
            names = ", ".join(v.name for v in enum.values)
            raise _invalid(path, f"{value} is not a {enum.name} (one of {names})")
    elif t in (_T.TYPE_UINT64, _T.TYPE_FIXED64):
        if value > INT64_MAX:
            raise _invalid(path, f"{value} is out of range (at most {INT64_MAX})")
    elif t in (_T.TYPE_INT32, _T.TYPE_SINT32, _T.TYPE_SFIXED32):
        if fd.name in NON_NEGATIVE and value < 0:
            raise _invalid(path, f"must not be negative, got {value}")
        if fd.name == "priority" and not 0 <= value <= 100:
            raise _invalid(path, f"must be 1..100 (0: the default), got {value}")
    elif t in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
        if not math.isfinite(value):
            raise _invalid(path, "must be a finite number")


def _check_well_known(path: str, msg: Message) -> bool:
    """Check a Duration/Timestamp; False when ``msg`` is neither."""
    full = msg.DESCRIPTOR.full_name
    if full == "google.protobuf.Duration":
        s, n = msg.seconds, msg.nanos  # type: ignore[attr-defined]
        if (abs(s) > DURATION_MAX_SECONDS or abs(n) > 999_999_999
                or (s > 0 and n < 0) or (s < 0 and n > 0)):  # fmt: skip
            raise _invalid(path, f"is not a valid duration ({s}s {n}ns)")
        if s < 0 or n < 0:
            raise _invalid(path, "must not be negative")
        return True
    if full == "google.protobuf.Timestamp":
        s, n = msg.seconds, msg.nanos  # type: ignore[attr-defined]
        if not TIMESTAMP_MIN_SECONDS <= s <= TIMESTAMP_MAX_SECONDS or not 0 <= n <= 999_999_999:
            raise _invalid(path, f"is not a valid timestamp ({s}s {n}ns): years 1-9999")
        return True
    return False


class _Bad(Exception):
    """A value no handler could use; the path is assembled while unwinding,
    so a request that passes (nearly all) never builds a path string."""

    def __init__(self, what: str, path: str = "", max_entries: int = 0) -> None:
        super().__init__(what)
        self.what = what
        self.segments: list[str] = [path] if path else []
        #: For a collection over its cap: the cap, told in the refusal's
        #: metadata (``max_entries``) so a client splits its next request.
        self.max_entries = max_entries


Check = Callable[[Any, int], None]  # (value, depth) -> None, or raises _Bad


def _leaf(fd: FieldDescriptor, limits: Limits) -> Check:
    """The check of one scalar value of ``fd`` (raises :class:`_Bad`)."""

    def check(value: Any, depth: int) -> None:
        try:
            _check_scalar("", fd, value, limits)
        except InvalidArgument as err:
            # The message is "<path>: <what>" with an empty path.
            raise _Bad(err.message.partition(": ")[2]) from None

    t = fd.type
    if t == _T.TYPE_STRING and fd.name not in ("namespace", "prefix") and not is_id_field(
            fd.name):
        cap = string_cap(fd.name, limits)

        def capped(value: Any, depth: int) -> None:
            if len(value) > cap:
                raise _Bad(f"is {len(value)} characters long; at most {cap}")

        return capped
    if t == _T.TYPE_STRING:
        # One compiled match per value (a set built per value was ~1/3 of
        # an evaluation's walk); a miss goes the long way for its message.
        valid = re.compile(rf"[A-Za-z0-9_.\-]{{1,{limits.max_id}}}").fullmatch

        def ident(value: Any, depth: int) -> None:
            if valid(value) is None:
                check(value, depth)

        return ident
    if t == _T.TYPE_ENUM:
        enum = fd.enum_type
        assert enum is not None
        known = frozenset(enum.values_by_number)

        def defined(value: Any, depth: int) -> None:
            if value not in known:
                check(value, depth)

        return defined
    if t in (_T.TYPE_UINT64, _T.TYPE_FIXED64):
        def in_range(value: Any, depth: int) -> None:
            if value > INT64_MAX:
                check(value, depth)

        return in_range
    if t in (_T.TYPE_INT32, _T.TYPE_SINT32, _T.TYPE_SFIXED32):
        low, high = (0, 100) if fd.name == "priority" else (
            (0, None) if fd.name in NON_NEGATIVE else (None, None))
        if low is None:
            return _nothing

        def bounded(value: Any, depth: int) -> None:
            if value < low or (high is not None and value > high):
                check(value, depth)

        return bounded
    if t in (_T.TYPE_BOOL, _T.TYPE_INT64, _T.TYPE_SINT64, _T.TYPE_SFIXED64,
             _T.TYPE_UINT32, _T.TYPE_FIXED32):
        return _nothing
    return check


def _nothing(value: Any, depth: int) -> None:
    return None


def _field_check(fd: FieldDescriptor, limits: Limits) -> Check:
    """The check of a set field of ``fd`` (its whole value: repeated, map or one)."""
    sub = fd.message_type
    if sub is not None and sub.GetOptions().map_entry:
        return _map_check(sub, limits)
    one = _value_check(fd, limits)
    if not fd.is_repeated:
        return one
    cap = limits.max_repeated

    def each(value: Any, depth: int) -> None:
        if len(value) > cap:
            raise _too_many(len(value), cap)
        for i, item in enumerate(value):
            _check_entry(one, item, depth, i)

    return each


def _value_check(fd: FieldDescriptor, limits: Limits) -> Check:
    """The check of one value of ``fd``: a message's plan, one level
    deeper, or a scalar's leaf check."""
    if fd.message_type is None:
        return _leaf(fd, limits)
    plan = _plan(fd.message_type, limits)

    def one(value: Any, depth: int) -> None:
        _run(plan, value, depth + 1, limits)

    return one


def _check_entry(check: Check, item: Any, depth: int, at: int | str) -> None:
    """``check`` of one entry of a list or map; a refusal names the entry
    (``[3]``, ``['key']``)."""
    try:
        check(item, depth)
    except _Bad as bad:
        bad.segments.append(f"[{at!r}]")
        raise


def _too_many(n: int, cap: int) -> _Bad:
    return _Bad(f"has {n} entries; at most {cap} (split the request)", max_entries=cap)


def _map_check(entry: Descriptor, limits: Limits) -> Check:
    vfd = entry.fields_by_name["value"]
    item_check: Check
    if vfd.type == _T.TYPE_STRING:
        def item_check(item: Any, depth: int) -> None:
            if len(item) > limits.max_map_value:
                raise _Bad(f"is {len(item)} characters long; at most {limits.max_map_value}")
    else:
        item_check = _value_check(vfd, limits)

    def check(value: Any, depth: int) -> None:
        if len(value) > limits.max_map_entries:
            raise _too_many(len(value), limits.max_map_entries)
        for key, item in value.items():
            if isinstance(key, str) and len(key) > limits.max_map_key:
                raise _Bad(f"has a key {len(key)} characters long; at most "
                           f"{limits.max_map_key}")
            _check_entry(item_check, item, depth, clip(str(key), 40))

    return check


_Plan = dict[FieldDescriptor, Check] | Check
_PLANS: dict[tuple[Descriptor, Limits], _Plan] = {}


def _plan(descriptor: Descriptor, limits: Limits) -> _Plan:
    """Per message type (and limits), made once: a check per field number, or
    one check of the whole message for Duration/Timestamp. Fields are bound
    lazily, so recursive types would still terminate (``max_depth`` bounds
    the walk)."""
    key = (descriptor, limits)
    got = _PLANS.get(key)
    if got is not None:
        return got
    if descriptor.full_name in ("google.protobuf.Duration", "google.protobuf.Timestamp"):
        low, high = ((0, DURATION_MAX_SECONDS)
                     if descriptor.full_name == "google.protobuf.Duration"
                     else (TIMESTAMP_MIN_SECONDS, TIMESTAMP_MAX_SECONDS))

        def well_known(msg: Any, depth: int) -> None:
            if low <= msg.seconds <= high and 0 <= msg.nanos <= 999_999_999:
                return  # the common case, valid for both (negatives: below)
            try:
                _check_well_known("", msg)
            except InvalidArgument as err:
                raise _Bad(err.message.partition(": ")[2]) from None

        _PLANS[key] = well_known
        return well_known
    # Keyed by the field's descriptor, which ListFields hands back as it is
    # (no attribute read per field of every message checked).
    plan: dict[FieldDescriptor, Check] = {}
    _PLANS[key] = plan  # before the fields: a self-referencing type finds it
    for fd in descriptor.fields:
        plan[fd] = _lazy(fd, limits, plan)
    return plan


def _lazy(fd: FieldDescriptor, limits: Limits, plan: dict[FieldDescriptor, Check]) -> Check:
    def first(value: Any, depth: int) -> None:
        plan[fd] = check = _field_check(fd, limits)
        check(value, depth)

    return first


def _run(plan: _Plan, msg: Any, depth: int, limits: Limits) -> None:
    if depth > limits.max_depth:
        raise _Bad(f"nests deeper than {limits.max_depth} messages")
    if not isinstance(plan, dict):
        plan(msg, depth)
        return
    for fd, value in msg.ListFields():
        check = plan.get(fd)
        if check is None:
            continue  # an extension: not drover's
        try:
            check(value, depth)
        except _Bad as bad:
            bad.segments.append(f".{fd.name}")
            raise


def _checked(request: Message, limits: Limits) -> None:
    """:func:`check_request`: the accept-only function of
    :mod:`drover.validation.accept` first (cheaper per evaluation); the walk
    only when it cannot vouch for the request, which then decides (and
    names the field) as it always did."""
    descriptor: Any = request.DESCRIPTOR
    if not acceptor(descriptor, limits)(request, 0):
        _walk(request, limits)


def _walk(request: Message, limits: Limits) -> None:
    """The walk, compiled per message type (an evaluation took ~13 us walked
    field by field, ~4.4 us so; see bench/results/issue15/README.md)."""
    descriptor: Any = request.DESCRIPTOR
    try:
        _run(_plan(descriptor, limits), request, 0, limits)
    except _Bad as bad:
        path = "".join(reversed(bad.segments)).lstrip(".")
        err = _invalid(path or "request", bad.what)
        if bad.max_entries:
            err.metadata["max_entries"] = str(bad.max_entries)
        raise err from None


def check_request(request: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise InvalidArgument for the first unusable field of ``request``.

    Anything that is not a protobuf message (the proxy's raw bytes) passes:
    the service that decodes it checks it."""
    if isinstance(request, Message):
        _checked(request, limits)

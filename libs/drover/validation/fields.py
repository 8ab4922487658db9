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

Pure: protobuf descriptors only, no gRPC, no asyncio. Messages are
checked, never changed; unknown fields (a newer client's) are left alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from drover.errors import InvalidArgument, clip

__all__ = ["Limits", "check_request", "is_id_field"]

# protobuf's own bounds (google/protobuf/duration.proto, timestamp.proto).
DURATION_MAX_SECONDS = 315_576_000_000
TIMESTAMP_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00Z
TIMESTAMP_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
INT64_MAX = 2**63 - 1

ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")

_T = FieldDescriptor


@dataclass(frozen=True)
class Limits:
    """Caps on request values. Far below the 16 MiB message limit, and
    such that any value echoed in an error stays small."""

    max_id: int = 128
    max_string: int = 8 * 1024
    max_filter: int = 4 * 1024
    max_page_token: int = 4 * 1024
    max_document: int = 64 * 1024
    max_map_key: int = 256
    max_map_value: int = 16 * 1024
    max_bytes: int = 64 * 1024
    max_repeated: int = 1024
    max_map_entries: int = 256
    max_depth: int = 16


DEFAULT_LIMITS = Limits()

#: Fields named like this hold object ids (and so do ``*_id``/``*_ids``).
_ID_NAMES = frozenset({
    "id", "ids", "keys", "previous_eval", "next_eval", "blocked_eval",
    "previous_allocation", "placed_canaries", "replica",
})
#: Strings that hold whole documents (an ACL policy's rules).
_DOCUMENTS = frozenset({"rules"})
#: int32 fields that count things: never negative.
_NON_NEGATIVE = frozenset({
    "page_size", "count", "max_parallel", "canary", "desired_canaries", "desired_total",
    "placed_allocs", "healthy_allocs", "unhealthy_allocs",
})


def is_id_field(name: str) -> bool:
    return name in _ID_NAMES or name.endswith(("_id", "_ids"))


def _invalid(path: str, what: str) -> InvalidArgument:
    return InvalidArgument(f"{clip(path, 200)}: {what}", metadata={"field": clip(path, 200)})


def _string_cap(name: str, limits: Limits) -> int:
    if name == "filter":
        return limits.max_filter
    if name == "page_token":
        return limits.max_page_token
    if name in _DOCUMENTS:
        return limits.max_document
    return limits.max_string


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
        cap = _string_cap(name, limits)
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
        if fd.name in _NON_NEGATIVE and value < 0:
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


def _items(msg: Message) -> Iterator[tuple[FieldDescriptor, Any]]:
    return iter(msg.ListFields())


def _check_message(path: str, msg: Message, limits: Limits, depth: int) -> None:
    if depth > limits.max_depth:
        raise _invalid(path or "request", f"nests deeper than {limits.max_depth} messages")
    if _check_well_known(path, msg):
        return
    for fd, value in _items(msg):
        here = f"{path}.{fd.name}" if path else fd.name
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            _check_map(here, fd, value, limits, depth)
        elif fd.is_repeated:
            if len(value) > limits.max_repeated:
                raise _invalid(here, f"has {len(value)} entries; at most {limits.max_repeated}")
            for i, item in enumerate(value):
                _check_value(f"{here}[{i}]", fd, item, limits, depth)
        else:
            _check_value(here, fd, value, limits, depth)


def _check_value(path: str, fd: FieldDescriptor, value: Any, limits: Limits, depth: int) -> None:
    if fd.type == _T.TYPE_MESSAGE:
        _check_message(path, value, limits, depth + 1)
    else:
        _check_scalar(path, fd, value, limits)


def _check_map(path: str, fd: FieldDescriptor, value: Any, limits: Limits, depth: int) -> None:
    if len(value) > limits.max_map_entries:
        raise _invalid(path, f"has {len(value)} entries; at most {limits.max_map_entries}")
    entry: Descriptor | None = fd.message_type
    assert entry is not None
    vfd = entry.fields_by_name["value"]
    for key, item in value.items():
        where = f"{path}[{clip(str(key), 40)!r}]"
        if isinstance(key, str) and len(key) > limits.max_map_key:
            raise _invalid(path, f"has a key {len(key)} characters long; at most "
                           f"{limits.max_map_key}")
        if vfd.type == _T.TYPE_MESSAGE:
            _check_message(where, item, limits, depth + 1)
        elif vfd.type == _T.TYPE_STRING:
            if len(item) > limits.max_map_value:
                raise _invalid(where, f"is {len(item)} characters long; at most "
                               f"{limits.max_map_value}")
        else:
            _check_scalar(where, vfd, item, limits)


def check_request(request: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise InvalidArgument for the first unusable field of ``request``.

    Anything that is not a protobuf message (the proxy's raw bytes) passes:
    the service that decodes it checks it."""
    if isinstance(request, Message):
        _check_message("", request, limits, 0)

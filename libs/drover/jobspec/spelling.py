"""Specs written by people, read as protos: ``type: service`` as well as
``type: JOB_TYPE_SERVICE``.

:func:`parse_spec` is ``json_format.ParseDict`` after one pass over the
data that rewrites enum values written the way users write them -- the
lowercase short name the filters and tables show (``service``,
``pending``), any case, dashes for underscores -- to the proto's name.
Values that are already proto names, numbers, or nothing the enum knows
are left as they are, so ParseDict reports the unknown ones in its own
words. Durations are written as people write them too (``5m``, ``1h30m``,
``90s``, as in Nomad's job specs). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from drover.config import parse_duration

__all__ = ["duration_value", "enum_value", "field_of", "parse_spec"]

M = TypeVar("M", bound=Message)


def _prefix(enum: EnumDescriptor) -> str:
    # Every drover enum starts with PREFIX_UNSPECIFIED = 0 (buf lint).
    zero = enum.values_by_number.get(0)
    if zero is None or not zero.name.endswith("UNSPECIFIED"):
        return ""
    return zero.name.removesuffix("UNSPECIFIED")


def enum_value(enum: EnumDescriptor, value: Any) -> Any:
    """The proto name for a user's spelling of an enum value, else ``value``."""
    if not isinstance(value, str) or value in enum.values_by_name:
        return value
    wanted = _prefix(enum) + value.strip().upper().replace("-", "_")
    return wanted if wanted in enum.values_by_name else value


def field_of(desc: Descriptor, key: str) -> FieldDescriptor | None:
    fd = desc.fields_by_name.get(key)
    if fd is not None:
        return fd
    return next((f for f in desc.fields if f.json_name == key), None)


def _normalize(desc: Any, data: Any) -> Any:
    if not isinstance(data, dict) or desc.full_name.startswith("google.protobuf."):
        return data
    out = {}
    for key, value in data.items():
        fd = field_of(desc, key) if isinstance(key, str) else None
        out[key] = value if fd is None else _value(fd, value)
    return out


def _value(fd: FieldDescriptor, value: Any) -> Any:
    msg = fd.message_type
    if msg is not None and msg.GetOptions().map_entry:
        vfd = msg.fields_by_name["value"]
        if isinstance(value, dict):
            return {k: _one(vfd, v) for k, v in value.items()}
        return value
    if fd.is_repeated and isinstance(value, list):
        return [_one(fd, v) for v in value]
    return _one(fd, value)


def duration_value(value: Any) -> Any:
    """``5m``, ``1h30m``, ``90`` (seconds) -> proto JSON's ``"300s"`` form, as
    Nomad's job specs write durations; anything else is left for ParseDict."""
    if not isinstance(value, str) or value.strip().startswith("-"):
        return value
    try:
        seconds = parse_duration(value)
    except ValueError as e:
        raise json_format.ParseError(str(e)) from None
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _one(fd: FieldDescriptor, value: Any) -> Any:
    if fd.enum_type is not None:
        return enum_value(fd.enum_type, value)
    if fd.message_type is not None and fd.message_type.full_name == "google.protobuf.Duration":
        return duration_value(value)
    if fd.message_type is not None:
        return _normalize(fd.message_type, value)
    return value


def parse_spec(data: dict[str, Any], message: M) -> M:
    """``data`` (parsed JSON or YAML) into ``message``; raises ParseError."""
    return json_format.ParseDict(_normalize(message.DESCRIPTOR, data), message)

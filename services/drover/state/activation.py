"""Proto -> CEL activation, and the one spelling of enum values in filters.

Filters name enum values the way operators say them: lower case without the
type prefix (``status == "pending"`` for ``EVALUATION_STATUS_PENDING``), as
in Nomad's filter expressions. Secondary indexes key enum fields the same
way, so an equality extracted from a filter selects an index directly.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message


@functools.cache
def _short_names(enum: EnumDescriptor) -> dict[int, str]:
    names = [v.name for v in enum.values]
    prefix = names[0].rsplit("_UNSPECIFIED", 1)[0] + "_" if names else ""
    return {v.number: v.name.removeprefix(prefix).lower() for v in enum.values}


def enum_short(msg: Message, field: str) -> str:
    fd = msg.DESCRIPTOR.fields_by_name[field]
    assert fd.enum_type is not None
    return _short_names(fd.enum_type).get(getattr(msg, field), str(getattr(msg, field)))


def _value(fd: Any, v: Any) -> Any:
    if fd.type == FieldDescriptor.TYPE_ENUM:
        return _short_names(fd.enum_type).get(v, str(v))
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        full = fd.message_type.full_name
        if full == "google.protobuf.Timestamp":
            return v.ToDatetime() if v.ByteSize() else None
        if full == "google.protobuf.Duration":
            return v.ToTimedelta()
        return to_activation(v)
    return v


def to_activation(msg: Message) -> dict[str, Any]:
    """Every field of ``msg`` (unset ones at their defaults) as CEL values."""
    out: dict[str, Any] = {}
    fd: Any
    for fd in msg.DESCRIPTOR.fields:
        v = getattr(msg, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[fd.name] = {k: _value(vfd, x) for k, x in v.items()}
        elif fd.is_repeated:
            out[fd.name] = [_value(fd, x) for x in v]
        else:
            out[fd.name] = _value(fd, v)
    return out


def field_names(msg_type: type[Message]) -> frozenset[str]:
    return frozenset(fd.name for fd in msg_type.DESCRIPTOR.fields)

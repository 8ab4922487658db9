"""Enum values as people read them, the same in tables and in ``--json``.

A proto enum value is named ``<ENUM TYPE IN UPPER SNAKE>_<VALUE>``
(``DeploymentStatus`` -> ``DEPLOYMENT_STATUS_SUCCESSFUL``); the CLI shows
``successful``, as Nomad does, in tables and JSON alike. A value whose name
does not carry its type's prefix is shown lower-cased whole. Job specs take
both spellings (:mod:`drover.jobspec.spelling`), so ``--json`` output reads back.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

__all__ = ["enum_prefix", "lower_enums", "value_name"]


def enum_prefix(enum: EnumDescriptor) -> str:
    """``DeploymentStatus`` -> ``DEPLOYMENT_STATUS_``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"


def value_name(enum: EnumDescriptor, name: str) -> str:
    """``DEPLOYMENT_STATUS_SUCCESSFUL`` -> ``successful``."""
    return name.removeprefix(enum_prefix(enum)).lower()


def _convert(field: FieldDescriptor, value: Any) -> Any:
    if field.enum_type is not None and isinstance(value, str):
        return value_name(field.enum_type, value)
    if field.message_type is not None and isinstance(value, dict):
        return lower_enums(field.message_type, value)
    return value


def lower_enums(descriptor: Descriptor | Any, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (``MessageToDict`` of a ``descriptor`` message, proto field
    names) with every enum value, nested and repeated ones included, as the
    tables show it. Well-known types (Duration, Timestamp, Struct) are
    strings or plain JSON already and pass through."""
    if descriptor.full_name.startswith("google.protobuf."):
        return data
    out = dict(data)
    for field in descriptor.fields:
        if field.name not in out:
            continue
        value = out[field.name]
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            vfield = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _convert(vfield, v) for k, v in value.items()}
        elif isinstance(value, list):
            out[field.name] = [_convert(field, v) for v in value]
        else:
            out[field.name] = _convert(field, value)
    return out

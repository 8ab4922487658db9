"""The fields a filter may name, their types, and how to read them.

A :class:`Schema` describes one listed kind: each :class:`Field` has a name,
a :class:`FieldType` and a getter turning the object into the value CEL sees.
:meth:`Schema.for_message` derives it from a protobuf descriptor with a
precomputed plan per field (plain attribute reads, dict lookups for enums;
no ``MessageToDict``) because activations are built per object during scans:

==================  ==========================================================
proto               CEL value
==================  ==========================================================
string / bytes      string / bytes
int32..uint64       int
float / double      double
bool                bool
enum                lowercase short name: ``EVALUATION_STATUS_PENDING`` ->
                    ``"pending"`` (the enum's UPPER_SNAKE name is stripped)
Timestamp           timestamp (unset reads as 1970-01-01T00:00:00Z, proto3's
                    zero, so comparisons never fail on unset values)
Duration            duration
message             map of its fields (optional fields only when set, so
                    ``has(m.f)`` works)
map<...> / repeated map / list of converted values
==================  ==========================================================

Extra fields (the broker's ``state``) are plain :class:`Field` objects with
their own getter; ``via`` lets a schema read message fields from an object
that wraps the message.
"""

from __future__ import annotations

import datetime
import enum
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

__all__ = [
    "Field",
    "FieldKind",
    "FieldType",
    "Schema",
    "enum_names",
    "to_activation",
]

Getter = Callable[[Any], Any]


class FieldKind(enum.Enum):
    STRING = "string"
    INT = "int"
    DOUBLE = "double"
    BOOL = "bool"
    BYTES = "bytes"
    TIMESTAMP = "timestamp"
    DURATION = "duration"
    ENUM = "enum"
    MAP = "map"
    LIST = "list"


@dataclass(frozen=True)
class FieldType:
    kind: FieldKind
    # Allowed names of an enum; element type of a list.
    values: tuple[str, ...] = ()
    element: FieldType | None = None

    @staticmethod
    def enum(values: Iterable[str]) -> FieldType:
        return FieldType(FieldKind.ENUM, values=tuple(values))

    @staticmethod
    def list_of(element: FieldType) -> FieldType:
        return FieldType(FieldKind.LIST, element=element)

    def describe(self) -> str:
        if self.kind is FieldKind.ENUM:
            return "enum (one of " + ", ".join(f'"{v}"' for v in self.values) + ")"
        if self.kind is FieldKind.LIST and self.element is not None:
            return f"list of {self.element.describe()}"
        return self.kind.value


STRING = FieldType(FieldKind.STRING)
INT = FieldType(FieldKind.INT)
DOUBLE = FieldType(FieldKind.DOUBLE)
BOOL = FieldType(FieldKind.BOOL)
BYTES = FieldType(FieldKind.BYTES)
TIMESTAMP = FieldType(FieldKind.TIMESTAMP)
DURATION = FieldType(FieldKind.DURATION)
MAP = FieldType(FieldKind.MAP)

_ZERO: dict[FieldKind, Any] = {
    FieldKind.STRING: "",
    FieldKind.INT: 0,
    FieldKind.DOUBLE: 0.0,
    FieldKind.BOOL: False,
    FieldKind.BYTES: b"",
    FieldKind.TIMESTAMP: datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
    FieldKind.DURATION: datetime.timedelta(0),
    FieldKind.MAP: {},
    FieldKind.LIST: [],
}

_SAMPLE: dict[FieldKind, Any] = {
    FieldKind.STRING: "x",
    FieldKind.INT: 7,
    FieldKind.DOUBLE: 7.5,
    FieldKind.BOOL: True,
    FieldKind.BYTES: b"x",
    FieldKind.TIMESTAMP: datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC),
    FieldKind.DURATION: datetime.timedelta(seconds=7),
    FieldKind.MAP: {"x": "x"},
    FieldKind.LIST: ["x"],
}


@dataclass(frozen=True)
class Field:
    name: str
    type: FieldType
    get: Getter = field(compare=False, repr=False)

    def zero(self) -> Any:
        """A representative value (used to probe a filter's result type)."""
        if self.type.kind is FieldKind.ENUM:
            return self.type.values[0] if self.type.values else ""
        return _ZERO[self.type.kind]

    def sample(self) -> Any:
        """A second value, unlike :meth:`zero` wherever the type allows: a
        filter that fails on both fails whatever the data (see the compiler)."""
        if self.type.kind is FieldKind.ENUM:
            return self.type.values[-1] if self.type.values else "x"
        return _SAMPLE[self.type.kind]


class Schema:
    """Named, typed fields of one listed kind."""

    def __init__(self, fields: Iterable[Field], *, name: str = "") -> None:
        self.name = name
        self.fields: dict[str, Field] = {}
        for f in fields:
            if f.name in self.fields:
                raise ValueError(f"duplicate field {f.name!r} in schema {name!r}")
            self.fields[f.name] = f

    def __contains__(self, name: object) -> bool:
        return name in self.fields

    def field(self, name: str) -> Field:
        return self.fields[name]

    def getter(self, name: str) -> Getter:
        """The CEL-value reader for ``name`` (use it for index extractors too)."""
        return self.fields[name].get

    def names(self) -> list[str]:
        return sorted(self.fields)

    def activation(self, obj: Any, names: Iterable[str] | None = None) -> dict[str, Any]:
        chosen = self.fields.values() if names is None else (self.fields[n] for n in names)
        return {f.name: f.get(obj) for f in chosen}

    def with_fields(self, *extra: Field) -> Schema:
        return Schema([*self.fields.values(), *extra], name=self.name)

    @classmethod
    def for_message(
        cls,
        descriptor: Any,
        *,
        via: Getter | None = None,
        extra: Iterable[Field] = (),
        exclude: Iterable[str] = (),
    ) -> Schema:
        """The schema of a message descriptor (``Evaluation.DESCRIPTOR``).

        ``via`` reads the message from a wrapping object; ``extra`` adds fields.
        """
        skip = set(exclude)
        fields = []
        for fd in descriptor.fields:
            if fd.name in skip:
                continue
            ftype, get = _plan(fd)
            if via is not None:
                get = _compose(get, via)
            fields.append(Field(fd.name, ftype, get))
        return cls([*fields, *extra], name=descriptor.full_name)

    @classmethod
    def for_mapping(cls, types: Mapping[str, FieldType], *, name: str = "") -> Schema:
        """Objects that are dicts already holding CEL values."""
        return cls((Field(n, t, operator.itemgetter(n)) for n, t in types.items()), name=name)

    @classmethod
    def for_attributes(cls, types: Mapping[str, FieldType], *, name: str = "") -> Schema:
        """Objects whose attributes already hold CEL values."""
        return cls((Field(n, t, operator.attrgetter(n)) for n, t in types.items()), name=name)


_SCHEMAS: dict[str, Schema] = {}


def to_activation(message: Any, names: Iterable[str] | None = None) -> dict[str, Any]:
    """A message as the dict CEL evaluates (all fields, or just ``names``)."""
    descriptor = message.DESCRIPTOR
    schema = _SCHEMAS.get(descriptor.full_name)
    if schema is None:
        schema = _SCHEMAS[descriptor.full_name] = Schema.for_message(descriptor)
    return schema.activation(message, names)


def enum_names(descriptor: EnumDescriptor) -> dict[int, str]:
    """Number -> lowercase short name (``JOB_TYPE_SERVICE`` -> ``"service"``)."""
    prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", descriptor.name).upper() + "_"
    names = [v.name for v in descriptor.values]
    if not all(n.startswith(prefix) and len(n) > len(prefix) for n in names):
        prefix = _common_prefix(names)
    return {v.number: v.name[len(prefix) :].lower() for v in descriptor.values}


def _common_prefix(names: list[str]) -> str:
    if len(names) < 2:
        return ""
    first, last = min(names), max(names)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[: first.rfind("_", 0, i) + 1]


# -- per-field plans ----------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_TIMESTAMP = "google.protobuf.Timestamp"
_DURATION = "google.protobuf.Duration"
_INTS = {
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}  # fmt: skip
_SCALARS = {
    FieldDescriptor.TYPE_STRING: STRING,
    FieldDescriptor.TYPE_BYTES: BYTES,
    FieldDescriptor.TYPE_BOOL: BOOL,
    FieldDescriptor.TYPE_FLOAT: DOUBLE,
    FieldDescriptor.TYPE_DOUBLE: DOUBLE,
    **dict.fromkeys(_INTS, INT),
}


def _compose(get: Getter, via: Getter) -> Getter:
    return lambda obj: get(via(obj))


def _timestamp(ts: Any) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)


def _duration(d: Any) -> datetime.timedelta:
    return datetime.timedelta(seconds=d.seconds, microseconds=d.nanos // 1000)


def _value_plan(fd: FieldDescriptor) -> tuple[FieldType, Callable[[Any], Any] | None]:
    """Type of one (non-repeated) value of ``fd`` and its converter (None: as is)."""
    if fd.type == FieldDescriptor.TYPE_ENUM:
        assert fd.enum_type is not None
        names = enum_names(fd.enum_type)
        return FieldType.enum(names.values()), lambda n: names.get(n, str(n))
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        assert fd.message_type is not None
        name = fd.message_type.full_name
        if name == _TIMESTAMP:
            return TIMESTAMP, _timestamp
        if name == _DURATION:
            return DURATION, _duration
        return MAP, _message_converter(fd.message_type)
    return _SCALARS[fd.type], None


def _plan(fd: FieldDescriptor) -> tuple[FieldType, Getter]:
    attr = operator.attrgetter(fd.name)
    entry = fd.message_type
    if entry is not None and entry.GetOptions().map_entry:
        _, convert = _value_plan(entry.fields_by_name["value"])
        if convert is None:
            return MAP, lambda m: dict(attr(m))
        conv = convert
        return MAP, lambda m: {k: conv(v) for k, v in attr(m).items()}
    ftype, convert = _value_plan(fd)
    if fd.is_repeated:
        if convert is None:
            return FieldType.list_of(ftype), lambda m: list(attr(m))
        conv = convert
        return FieldType.list_of(ftype), lambda m: [conv(v) for v in attr(m)]
    if convert is None:
        return ftype, attr
    conv = convert
    return ftype, lambda m: conv(attr(m))


_CONVERTERS: dict[str, Callable[[Any], dict[str, Any]]] = {}


def _message_converter(descriptor: Descriptor) -> Callable[[Any], dict[str, Any]]:
    cached = _CONVERTERS.get(descriptor.full_name)
    if cached is not None:
        return cached
    plan: list[tuple[str, Getter, bool]] = []

    def convert(message: Any) -> dict[str, Any]:
        return {
            name: get(message)
            for name, get, presence in plan
            if not presence or message.HasField(name)
        }

    # Registered before planning the fields so recursive messages terminate.
    _CONVERTERS[descriptor.full_name] = convert
    for fd in descriptor.fields:
        presence = fd.has_presence and fd.type != FieldDescriptor.TYPE_MESSAGE
        plan.append((fd.name, _plan(fd)[1], presence and not fd.is_repeated))
    return convert

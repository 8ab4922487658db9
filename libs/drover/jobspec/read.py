"""A job spec file read into a Job, every mistake as one line a person acts on.

:func:`read_job` reads YAML or JSON (a top-level ``job:`` wrapper is
allowed) and checks it against the Job message before parsing, so a mistake
reads ``web.yaml:7: unknown field "cout" in task group (did you mean
"count"?)``, ``web.yaml:3: type: "servic" is not a job type: one of service,
batch, system (did you mean "service"?)`` or ``web.yaml:4: could not parse
the file: mapping values are not allowed here``: the file and line first, no
parser internals. The enum and duration spellings people write are
:mod:`.spelling`'s. Pure but for reading the file.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from drover.api.types.v1 import job_pb2
from drover.jobspec.spelling import duration_value, enum_value, field_of, parse_spec

__all__ = ["SpecError", "parse_job", "read_job"]

#: A place in the spec: keys and list indexes from the top.
Where = tuple[str | int, ...]


class SpecError(ValueError):
    """A job spec that cannot be read; ``str()`` is the one line to print."""


def read_job(path: str) -> job_pb2.Job:
    """The Job in the file at ``path``; :class:`SpecError` says what is wrong."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read it: {e.strerror if isinstance(e, OSError) else e}"
                        ) from None
    return parse_job(text, path)


def parse_job(text: str, name: str) -> job_pb2.Job:
    """The Job in ``text`` (the file ``name``: what error lines start with)."""
    data, lines = _load(text, name)
    top: Where = ()
    if isinstance(data, dict) and isinstance(data.get("job"), dict):
        data, top = data["job"], ("job",)
    if not isinstance(data, dict):
        raise SpecError(f"{name}:1: expected a job (a mapping of fields such as id, type, "
                        "task_groups) at the top level")
    for where, problem in _problems(job_pb2.Job.DESCRIPTOR, data, top):
        raise SpecError(f"{name}:{_line(lines, where)}: {problem}")
    try:
        return parse_spec(data, job_pb2.Job())
    except json_format.ParseError as e:  # what the checks above do not foresee
        raise SpecError(f"{name}: {' '.join(str(e).split())}") from None


def _load(text: str, name: str) -> tuple[Any, dict[Where, int]]:
    if name.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpecError(f"{name}:{e.lineno}: could not parse the file as JSON: {e.msg}"
                            ) from None
        try:
            return data, _lines(yaml.compose(text, Loader=yaml.SafeLoader))
        except yaml.YAMLError:
            return data, {}
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise SpecError(f"{name}:{line}: could not parse the file as YAML: "
                        f"{e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{name}: could not parse the file as YAML: {e}") from None
    return data, _lines(node)


def _lines(node: Any, where: Where = ()) -> dict[Where, int]:
    """The line (1-based) of every key and list item of a composed YAML tree."""
    out: dict[Where, int] = {}
    if node is None:
        return out
    out[where] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            here = (*where, str(key.value))
            out.update(_lines(value, here))
            out[here] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.update(_lines(item, (*where, i)))
    return out


def _line(lines: dict[Where, int], where: Where) -> int:
    while where and where not in lines:
        where = where[:-1]
    return lines.get(where, 1)


def _what(desc: Descriptor) -> str:
    """``TaskGroup`` -> ``task group``: how an error names a message."""
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in desc.name).strip()
    return "job" if desc.name == "Job" else words


def _names(desc: Descriptor) -> list[str]:
    return sorted({n for f in desc.fields for n in (f.name, f.json_name)})


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:
        close = [c for c in choices if c.lower() == word.lower().replace("-", "_")]
    return f' (did you mean "{close[0]}"?)' if close else ""


def _problems(desc: Descriptor | Any, data: Any, where: Where) -> Iterator[tuple[Where, str]]:
    """What is wrong in ``data`` read as ``desc``, with the place of each."""
    if not isinstance(data, dict):
        yield where, f"{_key(where)}: expected a mapping ({_what(desc)}), got {_kind(data)}"
        return
    for key, value in data.items():
        here = (*where, str(key))
        fd = field_of(desc, key) if isinstance(key, str) else None
        if fd is None:
            yield here, (f'unknown field "{key}" in {_what(desc)}'
                         f"{_suggest(str(key), _names(desc))}")
            continue
        yield from _field_problems(fd, value, here)


def _field_problems(fd: FieldDescriptor, value: Any, where: Where) -> Iterator[tuple[Where, str]]:
    msg = fd.message_type
    if value is None:
        return
    if msg is not None and msg.GetOptions().map_entry:
        if not isinstance(value, dict):
            yield where, f"{fd.name}: expected a mapping, got {_kind(value)}"
            return
        vfd = msg.fields_by_name["value"]
        for k, v in value.items():
            yield from _one_problems(vfd, v, (*where, str(k)), fd.name)
        return
    if fd.is_repeated:
        if not isinstance(value, list):
            yield where, f"{fd.name}: expected a list, got {_kind(value)}"
            return
        for i, item in enumerate(value):
            yield from _one_problems(fd, item, (*where, i), fd.name)
        return
    yield from _one_problems(fd, value, where, fd.name)


def _one_problems(fd: FieldDescriptor, value: Any, where: Where,
                  name: str) -> Iterator[tuple[Where, str]]:
    if fd.enum_type is not None:
        if isinstance(value, bool) or not isinstance(value, str | int):
            yield where, f"{name}: expected one of {_enum_words(fd)}, got {_kind(value)}"
        elif isinstance(value, str) and enum_value(fd.enum_type, value) not in \
                fd.enum_type.values_by_name:
            words = _enum_words(fd)
            yield where, (f'{name}: "{value}" is not valid: one of {words}'
                          f"{_suggest(value.lower(), words.split(', '))}")
        return
    msg = fd.message_type
    if msg is not None and msg.full_name == "google.protobuf.Duration":
        try:
            duration_value(value)
        except json_format.ParseError as e:
            yield where, f"{name}: {e}"
        return
    if msg is not None and not msg.full_name.startswith("google.protobuf."):
        yield from _problems(msg, value, where)
        return
    if msg is None and not _scalar_fits(fd, value):
        yield where, f"{name}: expected {_scalar_kind(fd)}, got {_kind(value)} {value!r}"


def _enum_words(fd: FieldDescriptor) -> str:
    enum = fd.enum_type
    assert enum is not None
    prefix = enum.values_by_number[0].name.removesuffix("UNSPECIFIED")
    return ", ".join(v.name.removeprefix(prefix).lower() for v in enum.values if v.number != 0)


_INTS = (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64,
         FieldDescriptor.CPPTYPE_UINT32, FieldDescriptor.CPPTYPE_UINT64)


def _scalar_fits(fd: FieldDescriptor, value: Any) -> bool:
    kind = fd.cpp_type
    if kind in _INTS:
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.strip().lstrip("-").isdigit())
    if kind == FieldDescriptor.CPPTYPE_BOOL:
        return isinstance(value, bool)
    if kind in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == FieldDescriptor.CPPTYPE_STRING:
        return isinstance(value, str)
    return True


def _scalar_kind(fd: FieldDescriptor) -> str:
    kind = fd.cpp_type
    if kind in _INTS:
        return "a whole number"
    if kind == FieldDescriptor.CPPTYPE_BOOL:
        return "true or false"
    if kind in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        return "a number"
    return 'text (quote it: "1.0")'


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    return "text" if isinstance(value, str) else type(value).__name__


def _key(where: Where) -> str:
    named = [w for w in where if isinstance(w, str)]
    return named[-1] if named else "job"

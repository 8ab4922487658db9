"""CEL filters over an object's fields, with the equalities an index can use.

Stand-in seam until :mod:`drover.filter` provides the shared compiler: the
state service needs exactly :class:`Filter` (``matches``, ``equalities``,
``exact``). Validation happens at compile time (syntax, unknown fields), so
a bad filter fails before any scan, with a message saying where.

Equality extraction is conservative: the filter is split on top-level
``&&`` (outside parentheses and string literals); each conjunct of the form
``field == "literal"`` (or an integer) is an equality. ``exact`` is true when
the whole filter is such a conjunction, so a count can come from index sizes
without evaluating CEL per object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import cel
from google.protobuf.message import Message

from drover.errors import InvalidArgument
from drover.state.activation import field_names, to_activation


class InvalidFilter(InvalidArgument):
    reason = "INVALID_FILTER"


_EQ = re.compile(
    r"""^\s*([A-Za-z_][A-Za-z0-9_]*)\s*==\s*"""
    r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|-?\d+)\s*$"""
)


def split_conjuncts(source: str) -> list[str]:
    """Top-level ``&&`` operands of ``source``."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(source):
        ch = source[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and source.startswith("&&", i):
            parts.append(source[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(source[start:])
    return parts


def extract_equalities(source: str) -> tuple[dict[str, Any], bool]:
    eqs: dict[str, Any] = {}
    exact = True
    for part in split_conjuncts(source):
        m = _EQ.match(part)
        if m is None or m.group(1) in eqs:
            exact = False
            continue
        lit = m.group(2)
        eqs[m.group(1)] = int(lit) if lit[0] not in "\"'" else lit[1:-1]
    return eqs, exact


@dataclass(frozen=True)
class Filter:
    source: str
    equalities: Mapping[str, Any] = field(default_factory=dict)
    exact: bool = True
    _program: Any = None
    _activation: Callable[[Message], dict[str, Any]] = to_activation

    def matches(self, msg: Message) -> bool:
        if self._program is None:
            return True
        try:
            return self._program.execute(self._activation(msg)) is True
        except (RuntimeError, TypeError, ValueError) as err:
            raise InvalidFilter(
                f"filter {self.source!r} failed on {type(msg).__name__} "
                f"{getattr(msg, 'id', '')!r}: {err}", metadata={"field": "filter"},
            ) from err


MATCH_ALL = Filter("")


def compile_filter(source: str, msg_type: type[Message]) -> Filter:
    """Compile ``source`` against ``msg_type``'s fields; empty matches all."""
    if not source.strip():
        return MATCH_ALL
    try:
        program = cel.compile(source)
    except ValueError as err:
        raise InvalidFilter(f"invalid filter: {err}", metadata={"field": "filter"}) from err
    known = field_names(msg_type)
    unknown = sorted(set(program.variables()) - known)
    if unknown:
        raise InvalidFilter(
            f"filter {source!r} names unknown field(s) {', '.join(unknown)}; "
            f"{msg_type.__name__} fields are: {', '.join(sorted(known))}",
            metadata={"field": "filter"},
        )
    eqs, exact = extract_equalities(source)
    return Filter(source, eqs, exact, program)

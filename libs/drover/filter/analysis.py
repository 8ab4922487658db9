"""Static checks and index constraints, read off the token stream.

CEL's ``==`` between different types is simply false, so ``priority ==
"high"`` or ``status == "bogus"`` would silently match nothing. This module
finds the unambiguous comparison shapes -- ``field OP literal``, ``literal OP
field``, ``field in [literals]``, ``literal in field`` -- where the operand
is delimited on both sides (so ``a + b == 1`` is not mistaken for ``b == 1``)
and checks the literal against the field's schema type; enums must be
compared with one of their names, and only with ``==``, ``!=`` or ``in``.
It also rejects member access on scalars (``job_id.x``).

:func:`constraints` extracts the top-level conjunction of equalities used to
pick an index: only when every top-level operator is ``&&`` (any top-level
``||`` or ``?:`` and there are none), and ``exact`` is true when the
expression is nothing but those equalities -- then a match is *exactly*
satisfying them and counting can use index bucket sizes alone.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from drover.filter.errors import InvalidFilter
from drover.filter.lexer import Tok, Token
from drover.filter.schema import FieldKind, FieldType, Schema

__all__ = ["Analysis", "analyze", "bound_names", "position"]

_COMPARE = {"==", "!=", "<", "<=", ">", ">="}
_LEFT = {None, "(", ",", "&&", "||", "?", ":", "[", "{"}
_RIGHT = {None, ")", ",", "&&", "||", "?", ":", "]", "}"}
_MACROS = {"all", "exists", "exists_one", "map", "filter"}
_LITERALS = {Tok.STRING, Tok.BYTES, Tok.INT, Tok.UINT, Tok.DOUBLE, Tok.BOOL, Tok.NULL}
_NUMBERS = {Tok.INT, Tok.UINT, Tok.DOUBLE}
_ACCEPTS: dict[FieldKind, set[Tok]] = {
    FieldKind.STRING: {Tok.STRING},
    FieldKind.ENUM: {Tok.STRING},
    FieldKind.INT: _NUMBERS,
    FieldKind.DOUBLE: _NUMBERS,
    FieldKind.BOOL: {Tok.BOOL},
    FieldKind.BYTES: {Tok.BYTES},
}
_HINTS = {
    FieldKind.TIMESTAMP: ' compare it with timestamp("2024-01-01T00:00:00Z")',
    FieldKind.DURATION: ' compare it with duration("1h")',
    FieldKind.MAP: ' compare one of its keys instead, e.g. {name}.key or {name}["key"]',
    FieldKind.LIST: " test membership instead, e.g. value in {name}",
}

Evaluate = Callable[[str], object]


@dataclass(frozen=True)
class Literal:
    kind: Tok
    text: str
    start: int
    end_index: int  # index of the token after the literal


@dataclass(frozen=True)
class Analysis:
    constraints: Mapping[str, frozenset[Hashable]]
    exact: bool


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def bound_names(tokens: Sequence[Token]) -> set[str]:
    """Names a comprehension macro binds: the ``x`` in ``list.all(x, ...)``."""
    names = set()
    for i in range(len(tokens) - 4):
        a, m, p, x, c = tokens[i : i + 5]
        if (a.text == "." and m.kind is Tok.IDENT and m.text in _MACROS and p.text == "("
                and x.kind is Tok.IDENT and c.text == ","):  # fmt: skip
            names.add(x.text)
    return names


def analyze(
    text: str,
    tokens: Sequence[Token],
    schema: Schema,
    names: Mapping[str, str],
    evaluate: Evaluate,
) -> Analysis:
    """Check literal comparisons and extract constraints.

    ``names`` maps identifiers as written in ``tokens`` to schema field
    names (identity, except aliases for CEL reserved words); identifiers
    not in it are not fields (bound variables, functions).
    """
    checker = _Checker(text, tokens, schema, names, evaluate)
    checker.run()
    return _constraints(tokens, names, evaluate)


class _Checker:
    def __init__(
        self,
        text: str,
        tokens: Sequence[Token],
        schema: Schema,
        names: Mapping[str, str],
        evaluate: Evaluate,
    ) -> None:
        self.text, self.tokens, self.schema, self.names = text, tokens, schema, names
        self.evaluate = evaluate

    def text_at(self, i: int) -> str | None:
        return self.tokens[i].text if 0 <= i < len(self.tokens) else None

    def field_at(self, i: int) -> FieldType | None:
        """The field's type if token i is a root field reference."""
        if not 0 <= i < len(self.tokens):
            return None
        tok = self.tokens[i]
        if tok.kind is not Tok.IDENT or self.text_at(i - 1) == "." or self.text_at(i + 1) == "(":
            return None
        name = self.names.get(tok.text)
        return None if name is None else self.schema.field(name).type

    def literal_at(self, i: int) -> Literal | None:
        toks = self.tokens
        if i < len(toks) and toks[i].text == "-" and i + 1 < len(toks):
            if toks[i + 1].kind in _NUMBERS:
                return Literal(toks[i + 1].kind, "-" + toks[i + 1].text, toks[i].start, i + 2)
            return None
        if i < len(toks) and toks[i].kind in _LITERALS:
            return Literal(toks[i].kind, toks[i].text, toks[i].start, i + 1)
        return None

    def run(self) -> None:
        for i, tok in enumerate(self.tokens):
            ftype = self.field_at(i)
            if ftype is not None:
                self.check_field(i, tok, ftype)
            elif tok.kind in _LITERALS and self.text_at(i - 1) in _LEFT:
                self.check_reversed(i)

    def check_field(self, i: int, tok: Token, ftype: FieldType) -> None:
        name = self.names[tok.text]
        after = self.text_at(i + 1)
        if after in (".", "[") and ftype.kind not in (FieldKind.MAP, FieldKind.LIST):
            is_call = after == "." and self.text_at(i + 3) == "("
            if not is_call:
                self.fail(tok, f"field {name!r} is {_a(ftype)} and has no members")
        if self.text_at(i - 1) not in _LEFT:
            return
        if after in _COMPARE:
            lit = self.literal_at(i + 2)
            if lit is not None and self.text_at(lit.end_index) in _RIGHT:
                self.check_literal(name, ftype, after or "", lit)
        elif after == "in" and self.text_at(i + 2) == "[":
            j = i + 3
            literals = []
            while (lit := self.literal_at(j)) is not None:
                literals.append(lit)
                j = lit.end_index + (1 if self.text_at(lit.end_index) == "," else 0)
            if self.text_at(j) == "]" and self.text_at(j + 1) in _RIGHT:
                for lit in literals:
                    self.check_literal(name, ftype, "in", lit)

    def check_reversed(self, i: int) -> None:
        lit = self.literal_at(i)
        if lit is None:
            return
        op = self.text_at(lit.end_index)
        j = lit.end_index + 1
        ftype = self.field_at(j)
        if ftype is None or self.text_at(j + 1) not in _RIGHT:
            return
        name = self.names[self.tokens[j].text]
        if op in _COMPARE:
            self.check_literal(name, ftype, op or "", lit)
        elif op == "in":
            if ftype.kind is FieldKind.LIST and ftype.element is not None:
                self.check_literal(f"{name}[]", ftype.element, "in", lit, label=name)
            elif ftype.kind is FieldKind.MAP:
                if lit.kind is not Tok.STRING:
                    self.fail_at(lit.start, f"map field {name!r} has string keys, not {lit.text}")
            else:
                self.fail_at(lit.start, f"'in {name}' needs a list or map, {name!r} is "
                             f"{_a(ftype)}")  # fmt: skip

    def check_literal(
        self, name: str, ftype: FieldType, op: str, lit: Literal, *, label: str | None = None
    ) -> None:
        shown = label or name
        accepted = _ACCEPTS.get(ftype.kind)
        if accepted is None or lit.kind not in accepted:
            hint = _HINTS.get(ftype.kind, "").format(name=shown)
            self.fail_at(
                lit.start,
                f"field {shown!r} is {_a(ftype)} and cannot be compared with "
                f"{lit.kind.value} {lit.text}" + (";" + hint if hint else ""),
                path=name,
            )
        if ftype.kind is FieldKind.ENUM:
            if op not in ("==", "!=", "in"):
                self.fail_at(lit.start, f"enum field {shown!r} supports only ==, != and in",
                             path=name)  # fmt: skip
            if self.evaluate(lit.text) not in ftype.values:
                valid = ", ".join(f'"{v}"' for v in ftype.values)
                self.fail_at(lit.start, f"{lit.text} is not a value of enum field {shown!r}; "
                             f"valid values: {valid}", path=name)  # fmt: skip

    def fail(self, tok: Token, message: str) -> None:
        self.fail_at(tok.start, message, path=self.names.get(tok.text, tok.text))

    def fail_at(self, offset: int, message: str, *, path: str | None = None) -> None:
        line, column = position(self.text, offset)
        meta = {"line": str(line), "column": str(column)}
        if path is not None:
            meta["path"] = path
        raise InvalidFilter(
            f"invalid filter at line {line}, column {column}: {message}", metadata=meta
        )


def _constraints(
    tokens: Sequence[Token], names: Mapping[str, str], evaluate: Evaluate
) -> Analysis:
    found: dict[str, frozenset[Hashable]] = {}
    exact = _conjuncts(list(tokens), names, evaluate, found)
    if exact is None:
        return Analysis({}, False)
    return Analysis(found, exact)


def _conjuncts(
    toks: list[Token], names: Mapping[str, str], evaluate: Evaluate,
    found: dict[str, frozenset[Hashable]],
) -> bool | None:  # fmt: skip
    """Add the equalities of a top-level && chain; None if the top is not one."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in toks:
        if tok.text in ("(", "[", "{"):
            depth += 1
        elif tok.text in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and tok.text in ("||", "?"):
            return None
        if depth == 0 and tok.text == "&&":
            parts.append([])
        else:
            parts[-1].append(tok)
    exact = True
    for part in parts:
        if _wrapped(part):
            inner = _conjuncts(part[1:-1], names, evaluate, found)
            exact = exact and bool(inner)
            continue
        equality = _equality(part, names, evaluate)
        if equality is None:
            exact = False
            continue
        name, values = equality
        found[name] = found[name] & values if name in found else values
    return exact


def _wrapped(part: list[Token]) -> bool:
    if len(part) < 2 or part[0].text != "(" or part[-1].text != ")":
        return False
    depth = 0
    for k, tok in enumerate(part):
        depth += tok.text in ("(", "[", "{")
        depth -= tok.text in (")", "]", "}")
        if depth == 0 and k < len(part) - 1:
            return False
    return True


def _equality(
    part: list[Token], names: Mapping[str, str], evaluate: Evaluate
) -> tuple[str, frozenset[Hashable]] | None:
    def field(tok: Token) -> str | None:
        return names.get(tok.text) if tok.kind is Tok.IDENT else None

    def literals(toks: list[Token]) -> list[str] | None:
        out: list[str] = []
        k = 0
        while k < len(toks):
            if toks[k].text == "-" and k + 1 < len(toks) and toks[k + 1].kind in _NUMBERS:
                out.append("-" + toks[k + 1].text)
                k += 2
            elif toks[k].kind in _LITERALS:
                out.append(toks[k].text)
                k += 1
            else:
                return None
            if k < len(toks):
                if toks[k].text != ",":
                    return None
                k += 1
        return out

    lits: list[str] | None = None
    name: str | None = None
    if len(part) >= 3 and part[1].text == "==" and (name := field(part[0])):
        lits = literals(part[2:])
        lits = lits if lits is not None and len(lits) == 1 else None
    elif len(part) >= 3 and part[-2].text == "==" and (name := field(part[-1])):
        lits = literals(part[:-2])
        lits = lits if lits is not None and len(lits) == 1 else None
    elif (len(part) >= 4 and part[1].text == "in" and part[2].text == "["
          and part[-1].text == "]" and (name := field(part[0]))):  # fmt: skip
        lits = literals(part[3:-1])
    if name is None or lits is None:
        return None
    values = frozenset(_hashable(evaluate(text)) for text in lits)
    return name, values


def _hashable(value: object) -> Hashable:
    return value if isinstance(value, Hashable) else repr(value)


def _a(ftype: FieldType) -> str:
    text = ftype.describe()
    return ("an " if text[0] in "aeiou" else "a ") + text

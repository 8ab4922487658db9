"""A fast path: the common CEL subset compiled into a plain Python predicate.

Scanning a million cached objects with CEL means, per object, decoding it and
building an activation; most filters people write are far simpler than CEL
allows: ``status == "pending" && priority > 90``, ``job_id in ["a", "b"]``,
``!(node_id.startsWith("x"))``. :func:`compile_predicate` turns exactly that
subset into nested closures over *fast getters* -- extractors reading a
field straight off whatever the caller stores (a compact record tuple), so a
match costs a few hundred nanoseconds and no decode.

The subset: ``&&``, ``||``, ``!``, parentheses, ``true``/``false``, a bool
field alone, ``field OP literal`` and ``literal OP field`` for the six
comparisons, ``field in [literals]`` and ``field.startsWith/endsWith/
contains("literal")``, on string, enum (as its lowercase name), int, double
and bool fields, where the literal is of the field's own CEL type (so CEL
could not raise, and Python's operators give CEL's answer). Anything else --
another function, arithmetic, a ternary, a timestamp, a field without a fast
getter, a uint or a mixed int/double comparison -- returns None and the
caller keeps CEL. Literals are evaluated by CEL itself, so escapes and hex
numbers mean exactly what they mean to CEL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drover.filter.lexer import Tok, Token
from drover.filter.schema import FieldKind, Schema

__all__ = ["Predicate", "compile_predicate"]

Predicate = Callable[[Any], bool]
Evaluate = Callable[[str], object]

_RELATIONS = {"==", "!=", "<", "<=", ">", ">="}
_SWAPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_LITERAL_OF: dict[FieldKind, set[Tok]] = {
    FieldKind.STRING: {Tok.STRING},
    FieldKind.ENUM: {Tok.STRING},
    FieldKind.INT: {Tok.INT},
    FieldKind.DOUBLE: {Tok.DOUBLE},
    FieldKind.BOOL: {Tok.BOOL},
}
_METHODS = {"startsWith": str.startswith, "endsWith": str.endswith}


class _NotInSubset(Exception):
    pass


def compile_predicate(
    tokens: Sequence[Token],
    names: Mapping[str, str],
    schema: Schema,
    getters: Mapping[str, Callable[[Any], Any]],
    evaluate: Evaluate,
) -> Predicate | None:
    """A predicate equal to the CEL expression ``tokens``, or None outside the subset.

    ``names`` maps identifiers as written to schema field names (the
    compiler's aliases); ``getters`` are the fast getters by field name.
    """
    parser = _Parser(list(tokens), names, schema, getters, evaluate)
    try:
        pred = parser.disjunction()
    except _NotInSubset:
        return None
    return pred if parser.at_end() else None


class _Parser:
    def __init__(
        self,
        tokens: list[Token],
        names: Mapping[str, str],
        schema: Schema,
        getters: Mapping[str, Callable[[Any], Any]],
        evaluate: Evaluate,
    ) -> None:
        self.toks, self.names, self.schema = tokens, names, schema
        self.getters, self.evaluate = getters, evaluate
        self.i = 0

    # -- token helpers ----------------------------------------------------

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def text(self, k: int = 0) -> str | None:
        tok = self.peek(k)
        return tok.text if tok is not None else None

    def take(self, text: str) -> None:
        if self.text() != text:
            raise _NotInSubset
        self.i += 1

    def at_end(self) -> bool:
        return self.i == len(self.toks)

    # -- grammar ------------------------------------------------------------

    def disjunction(self) -> Predicate:
        parts = [self.conjunction()]
        while self.text() == "||":
            self.i += 1
            parts.append(self.conjunction())
        return _fold(parts, any_of=True)

    def conjunction(self) -> Predicate:
        parts = [self.unary()]
        while self.text() == "&&":
            self.i += 1
            parts.append(self.unary())
        return _fold(parts, any_of=False)

    def unary(self) -> Predicate:
        if self.text() == "!":
            self.i += 1
            inner = self.negated()
            return lambda o: not inner(o)
        return self.relation()

    def negated(self) -> Predicate:
        """The operand of ``!``: CEL binds ``!`` tighter than a comparison."""
        if self.text() == "!":
            self.i += 1
            inner = self.negated()
            return lambda o: not inner(o)
        if self.text() == "(":
            pred = self.group()
        elif (field := self.field_at(0)) is not None and self.text(1) == ".":
            pred = self.method(field)  # a member call binds tighter than "!"
        else:
            pred = self.boolean()
        if self.text() in _RELATIONS or self.text() in (".", "in"):
            raise _NotInSubset
        return pred

    def group(self) -> Predicate:
        self.take("(")
        pred = self.disjunction()
        self.take(")")
        return pred

    def relation(self) -> Predicate:
        if self.text() == "(":
            pred = self.group()
            if self.text() in _RELATIONS or self.text() in (".", "in"):
                raise _NotInSubset
            return pred
        field = self.field_at(0)
        if field is not None:
            op = self.text(1)
            if op in _RELATIONS:
                self.i += 2
                return self.compare(field, op or "", self.literal(field))
            if op == "in":
                self.i += 2
                return self.membership(field)
            if op == ".":
                return self.method(field)
            return self.boolean()
        lit_tok = self.peek()
        if lit_tok is not None and (lit_tok.kind in (Tok.STRING, Tok.INT, Tok.DOUBLE)
                                    or lit_tok.text == "-"):  # fmt: skip
            start = self.i
            self.skip_literal()
            op = self.text()
            field = self.field_at(1)
            if op not in _RELATIONS or field is None:
                raise _NotInSubset
            end = self.i
            self.i = start
            value = self.literal(field)
            self.i = end + 2
            return self.compare(field, _SWAPPED[op or ""], value)
        return self.boolean()

    def boolean(self) -> Predicate:
        tok = self.peek()
        if tok is None:
            raise _NotInSubset
        if tok.kind is Tok.BOOL:
            self.i += 1
            value = tok.text == "true"
            return lambda o: value
        field = self.field_at(0)
        if field is None or self.schema.field(field).type.kind is not FieldKind.BOOL:
            raise _NotInSubset
        self.i += 1
        get = self.getters[field]
        return lambda o: get(o) is True

    def field_at(self, k: int) -> str | None:
        tok = self.peek(k)
        if tok is None or tok.kind is not Tok.IDENT or self.text(k + 1) == "(":
            return None
        name = self.names.get(tok.text)
        if name is None or name not in self.getters:
            if name is not None:
                raise _NotInSubset  # a field the fast getters cannot read
            return None
        if self.schema.field(name).type.kind not in _LITERAL_OF:
            raise _NotInSubset
        return name

    def skip_literal(self) -> None:
        if self.text() == "-":
            self.i += 1
        self.i += 1

    def literal(self, field: str) -> Any:
        kind = self.schema.field(field).type.kind
        negative = self.text() == "-"
        tok = self.peek(1 if negative else 0)
        if tok is None or tok.kind not in _LITERAL_OF[kind]:
            raise _NotInSubset
        if negative and tok.kind not in (Tok.INT, Tok.DOUBLE):
            raise _NotInSubset
        self.i += 2 if negative else 1
        value = self.evaluate(("-" if negative else "") + tok.text)
        if isinstance(value, bool) != (kind is FieldKind.BOOL):
            raise _NotInSubset
        return value

    def compare(self, field: str, op: str, value: Any) -> Predicate:
        get = self.getters[field]
        if op == "==":
            return lambda o: get(o) == value
        if op == "!=":
            return lambda o: get(o) != value
        if op == "<":
            return lambda o: get(o) < value
        if op == "<=":
            return lambda o: get(o) <= value
        if op == ">":
            return lambda o: get(o) > value
        return lambda o: get(o) >= value

    def membership(self, field: str) -> Predicate:
        self.take("[")
        values = []
        while self.text() != "]":
            values.append(self.literal(field))
            if self.text() == ",":
                self.i += 1
            elif self.text() != "]":
                raise _NotInSubset
        self.i += 1
        choices = frozenset(values)
        get = self.getters[field]
        return lambda o: get(o) in choices

    def method(self, field: str) -> Predicate:
        if self.schema.field(field).type.kind not in (FieldKind.STRING, FieldKind.ENUM):
            raise _NotInSubset
        name, arg = self.text(2), self.peek(4)
        if (name not in ("startsWith", "endsWith", "contains") or self.text(3) != "("
                or arg is None or arg.kind is not Tok.STRING or self.text(5) != ")"):  # fmt: skip
            raise _NotInSubset
        value = self.evaluate(arg.text)
        if not isinstance(value, str):
            raise _NotInSubset
        self.i += 6
        get = self.getters[field]
        if name == "contains":
            return lambda o: value in get(o)
        test = _METHODS[name or ""]
        return lambda o: test(get(o), value)


def _fold(parts: list[Predicate], *, any_of: bool) -> Predicate:
    pred = parts[0]
    for nxt in parts[1:]:
        pred = _either(pred, nxt) if any_of else _both(pred, nxt)
    return pred


def _both(a: Predicate, b: Predicate) -> Predicate:
    return lambda o: a(o) and b(o)


def _either(a: Predicate, b: Predicate) -> Predicate:
    return lambda o: a(o) or b(o)

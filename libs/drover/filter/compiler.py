"""Compile a CEL filter against a schema, once, and match objects fast.

:class:`FilterCompiler` turns an expression into a :class:`Filter` and keeps
the last ``cache_size`` in an LRU keyed by the expression string: clients
page with the same filter again and again. Compilation is where every
mistake surfaces as :class:`InvalidFilter` (reason ``INVALID_FILTER``):

* syntax errors, with line and column and a caret under the spot;
* unknown fields, naming the field and listing the valid ones;
* a field compared with a literal of the wrong type (see
  :mod:`drover.filter.analysis`);
* a result that is not a bool, or a type error, found by probing the
  program with every field at its zero value;
* a filter that fails to evaluate whatever the object (``1/0 == 1``,
  ``job_id.matches("(")``): it fails on the zero object *and* on a second,
  different one (every field at a non-zero sample value). Such a filter
  would match nothing, silently, so a typo would empty a list or a delete.

Matching reads only the fields the expression references (a CEL call costs
about one microsecond per activation entry, so a full activation would be
an order of magnitude slower). At run time a data-dependent failure -- a
missing map key, an index out of range, a division by zero, a function
rejecting its argument -- means "does not match"; a type error or a non-bool
result is the filter's fault and raises :class:`InvalidFilter`.

Fast path: given ``fast_fields`` (getters reading fields straight off the
stored item, e.g. a compact record tuple) a filter within the common subset
(:mod:`drover.filter.predicate`) matches through a plain Python predicate,
with no decode and no CEL; ``load`` turns an item into the object the
schema's getters read (a decoded proto) for every other filter.

Fields named like CEL reserved words (``namespace``) are usable: they are
rewritten to a same-length alias before CEL sees them, so positions in
messages stay those of the original text.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from functools import lru_cache
from typing import Any

import cel

from drover.errors import clip
from drover.filter.analysis import analyze, bound_names, position
from drover.filter.errors import InvalidFilter
from drover.filter.lexer import Tok, tokenize
from drover.filter.predicate import Predicate, compile_predicate
from drover.filter.schema import Field, Getter, Schema

__all__ = ["CEL_RESERVED", "Filter", "FilterCompiler"]

CEL_RESERVED = frozenset(
    "as break const continue else for function if import let loop package namespace "
    "return var void while".split()
)
_CEL_ERROR = re.compile(r"<input>:(\d+):(\d+): (.*)")
# Data-dependent failures: the object simply does not match.
_NO_MATCH = (KeyError, IndexError, ZeroDivisionError, OverflowError, RuntimeError, ValueError)


class Filter:
    """A compiled filter: ``matches(obj)`` plus what index selection needs."""

    __slots__ = ("_load", "_plan", "_program", "constraints", "exact", "expression", "fast",
                 "fields")  # fmt: skip

    def __init__(
        self,
        expression: str,
        program: Any,
        plan: tuple[tuple[str, Getter], ...],
        fields: tuple[str, ...],
        constraints: Mapping[str, frozenset[Hashable]],
        exact: bool,
        *,
        fast: Predicate | None = None,
        load: Getter | None = None,
    ) -> None:
        self.expression = expression
        # The subset predicate over the stored item, when the expression fits.
        self.fast = fast
        self._load = load
        self._program = program
        self._plan = plan
        # Fields the expression references, by schema name.
        self.fields = fields
        self.constraints = constraints
        self.exact = exact

    def __repr__(self) -> str:
        return f"Filter({self.expression!r})"

    def matches(self, obj: Any) -> bool:
        fast = self.fast
        if fast is not None:
            return fast(obj)
        program = self._program
        if program is None:
            return True
        if self._load is not None:
            obj = self._load(obj)
        activation = {alias: get(obj) for alias, get in self._plan}
        try:
            result = program.execute(activation)
        except TypeError as exc:
            raise InvalidFilter(f"filter {_quote(self.expression)} has a type error: "
                                f"{clip(str(exc))}") from exc
        except _NO_MATCH:
            return False
        if result is True or result is False:
            return result
        raise _not_bool(self.expression, result)


MATCH_ALL_EXPRESSION = ""


class FilterCompiler:
    """Compiles expressions for one schema; an LRU keeps recent ones."""

    def __init__(
        self,
        schema: Schema,
        *,
        cache_size: int = 256,
        fast_fields: Mapping[str, Getter] | None = None,
        load: Getter | None = None,
    ) -> None:
        """``fast_fields``/``load``: see the module docstring (both apply to
        the items later passed to :meth:`Filter.matches`)."""
        self.schema = schema
        self._fast_fields = dict(fast_fields or {})
        self._load = load
        self._aliases = _aliases(schema)
        self._cache: OrderedDict[str, Filter] = OrderedDict()
        self._cache_size = cache_size

    def compile(self, expression: str) -> Filter:
        cached = self._cache.get(expression)
        if cached is not None:
            self._cache.move_to_end(expression)
            return cached
        compiled = self._compile(expression)
        self._cache[expression] = compiled
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return compiled

    def __len__(self) -> int:
        return len(self._cache)

    def _compile(self, expression: str) -> Filter:
        if not expression.strip():
            return Filter(expression, None, (), (), {}, True, fast=_always)
        tokens = tokenize(expression)
        reverse = {alias: name for name, alias in self._aliases.items()}
        for i, tok in enumerate(tokens):  # an alias spelled by hand is no field
            member = i > 0 and tokens[i - 1].text == "."
            if tok.text in reverse and tok.kind is Tok.IDENT and not member:
                raise self._unknown(expression, tokens, tok.text)
        source, tokens = self._rewrite(expression, tokens)
        try:
            program = cel.compile(source)
        except ValueError as exc:
            raise _syntax_error(expression, str(exc)) from exc
        bound = bound_names(tokens)
        names: dict[str, str] = {}
        for written in program.variables():
            if written in bound:
                continue
            name = reverse.get(written, written)
            if name not in self.schema:
                raise self._unknown(expression, tokens, written)
            names[written] = name
        analysis = analyze(expression, tokens, self.schema, names, _evaluate_literal)
        plan = tuple((written, self.schema.getter(name)) for written, name in names.items())
        self._probe(expression, program, names)
        fields = tuple(sorted(names.values()))
        fast = None
        if self._fast_fields and set(fields) <= self._fast_fields.keys():
            fast = compile_predicate(tokens, names, self.schema, self._fast_fields,
                                     _evaluate_literal)  # fmt: skip
        return Filter(expression, program, plan, fields, analysis.constraints, analysis.exact,
                      fast=fast, load=self._load)  # fmt: skip

    def _rewrite(self, expression: str, tokens: list) -> tuple[str, list]:
        if not self._aliases:
            return expression, tokens
        chars = list(expression)
        out = []
        for i, tok in enumerate(tokens):
            alias = self._aliases.get(tok.text) if tok.kind is Tok.IDENT else None
            if alias is not None and not (i and tokens[i - 1].text == "."):
                chars[tok.start : tok.end] = alias
                tok = type(tok)(tok.kind, alias, tok.start)
            out.append(tok)
        return "".join(chars), out

    def _unknown(self, expression: str, tokens: list, written: str) -> InvalidFilter:
        offset = next((t.start for t in tokens if t.text == written), None)
        if offset is None:
            offset, shown = 0, written
        else:  # aliases keep the length, so the original spelling is right here
            shown = expression[offset : offset + len(written)]
        line, column = position(expression, offset)
        valid = ", ".join(self.schema.names())
        return InvalidFilter(
            f"invalid filter at line {line}, column {column}: unknown field {shown!r}; "
            f"valid fields: {valid}",
            metadata={"path": shown, "line": str(line), "column": str(column)},
        )

    def _probe(self, expression: str, program: Any, names: Mapping[str, str]) -> None:
        failures = []
        for value in (Field.zero, Field.sample):
            activation = {w: value(self.schema.field(n)) for w, n in names.items()}
            try:
                result = program.execute(activation)
            except TypeError as exc:
                raise InvalidFilter(f"filter {_quote(expression)} has a type error: "
                                    f"{clip(str(exc))}") from exc
            except _NO_MATCH as exc:
                failures.append(exc)
                continue
            if not isinstance(result, bool):
                raise _not_bool(expression, result)
        # A missing key or index is what data decides (an empty map at zero,
        # a different one at the sample); any other failure on two unlike
        # objects is the expression's own.
        if len(failures) == 2 and not any(isinstance(f, KeyError | IndexError)
                                          for f in failures):
            raise InvalidFilter(
                f"filter {_quote(expression)} cannot be evaluated: {clip(str(failures[-1]))}",
                metadata={"cause": type(failures[-1]).__name__})


def _quote(expression: str) -> str:
    return repr(clip(expression, 200))


def _always(obj: Any) -> bool:
    return True


@lru_cache(maxsize=1024)
def _evaluate_literal(text: str) -> object:
    return cel.evaluate(text)


def _aliases(schema: Schema) -> dict[str, str]:
    aliases = {}
    for name in schema.fields:
        if name in CEL_RESERVED:
            alias = name[0].upper() + name[1:]
            if alias in schema:
                alias = "_" + name[1:]
            aliases[name] = alias
    return aliases


def _not_bool(expression: str, result: object) -> InvalidFilter:
    kind = "null" if result is None else type(result).__name__
    return InvalidFilter(f"filter {_quote(expression)} must evaluate to a bool, not {kind}")


def _syntax_error(expression: str, detail: str) -> InvalidFilter:
    match = _CEL_ERROR.search(detail)
    if match is None:
        return InvalidFilter(f"invalid filter: {clip(detail)}")
    line, column, what = int(match[1]), int(match[2]), match[3].strip()
    lines = expression.splitlines() or [""]
    source_line = lines[line - 1] if line <= len(lines) else ""
    # Around the column only: a long line is not echoed whole.
    start = max(0, column - 1 - 60)
    source_line = source_line[start : column - 1 + 60]
    caret = " " * (column - 1 - start) + "^"
    return InvalidFilter(
        f"invalid filter at line {line}, column {column}: {clip(what)}\n  {source_line}\n"
        f"  {caret}",
        metadata={"line": str(line), "column": str(column)},
    )

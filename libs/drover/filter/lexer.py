"""A small CEL tokenizer for the static checks CEL itself does not do.

It runs on expressions CEL has already parsed (or, for the reserved-word
alias, on raw input, where it is lenient: an unknown character becomes an
``ERROR`` token). It needs only the token kinds that matter to
:mod:`drover.filter.analysis`: identifiers, literals (string, bytes, int,
uint, double, bool, null), operators and brackets, with their offsets so
messages can say where. Literal *values* are not decoded here: the analysis
asks CEL to evaluate the literal's text, which is exact by construction.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

__all__ = ["Tok", "Token", "tokenize"]


class Tok(enum.Enum):
    IDENT = "ident"
    STRING = "string"
    BYTES = "bytes"
    INT = "int"
    UINT = "uint"
    DOUBLE = "double"
    BOOL = "bool"
    NULL = "null"
    OP = "op"
    ERROR = "error"


@dataclass(frozen=True)
class Token:
    kind: Tok
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


_STRING_BODY = (
    r'"""(?:\\.|[^\\])*?"""'
    r"|'''(?:\\.|[^\\])*?'''"
    r'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'"
)
_PATTERNS = [
    ("SKIP", r"\s+|//[^\n]*"),
    ("BYTES", rf"[bB][rR]?(?:{_STRING_BODY})|[rR][bB](?:{_STRING_BODY})"),
    ("STRING", rf"[rR]?(?:{_STRING_BODY})"),
    ("DOUBLE", r"(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?)"),
    ("UINT", r"(?:0[xX][0-9a-fA-F]+|\d+)[uU]"),
    ("INT", r"0[xX][0-9a-fA-F]+|\d+"),
    ("IDENT", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("OP", r"==|!=|<=|>=|&&|\|\||[<>!+\-*/%?:.,()\[\]{}]"),
    ("ERROR", r"."),
]
_SCANNER = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _PATTERNS), re.DOTALL)
_WORDS = {"true": Tok.BOOL, "false": Tok.BOOL, "null": Tok.NULL}


def tokenize(expression: str) -> list[Token]:
    tokens: list[Token] = []
    for match in _SCANNER.finditer(expression):
        group = match.lastgroup
        if group == "SKIP" or group is None:
            continue
        text = match.group()
        kind = Tok[group]
        if kind is Tok.IDENT:
            kind = _WORDS.get(text, Tok.IDENT)
            if text == "in":
                kind = Tok.OP
        tokens.append(Token(kind, text, match.start()))
    return tokens

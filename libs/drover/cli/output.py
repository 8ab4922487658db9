"""Every shape the CLI prints, once: a table, a list, a detail block, a
watch line, JSON, and the words inside them (short ids, times, yes/no).

Nomad's shapes: tables with a header row and columns two spaces apart (no
rules, no trailing spaces), detail blocks of ``Key = Value`` lines, section
titles above tables; 80 columns unless ``--verbose``; ``--json`` prints the
whole object (``--json`` on a watch prints one compact object per line).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import click
from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from rich.console import Console

from drover.jobspec.enums import lower_enums, value_name

console = Console()
err_console = Console(stderr=True)

#: Where the client options a command was given are kept (``ctx.meta``).
CLIENT_META = "drover.client"

#: Characters of an id in tables, as Nomad's ``shortId``; ``--verbose``
#: shows all 36 (``fullId``).
SHORT_ID = 8
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: A text column is cut no narrower than this (or its header).
_MIN_CUT = 8


class Wants(Protocol):
    """What a printer needs to know of the command's options."""

    @property
    def json(self) -> bool: ...


def verbose() -> bool:
    """Whether the current command was given ``--verbose`` (full ids, full text)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(CLIENT_META, {}).get("verbose"))


def width() -> int:
    """The terminal's columns (``COLUMNS``; 80 when not a terminal)."""
    return console.width


# -- words ---------------------------------------------------------------------


def enum_name(value: int, enum: Any) -> str:
    """EVALUATION_STATUS_PENDING -> pending (as ``--json`` prints it too:
    :func:`drover.jobspec.enums.value_name`)."""
    return value_name(enum.DESCRIPTOR, enum.Name(value))


def yes_no(value: bool) -> str:
    """A flag in a table: ``yes``/``no`` (never True/False)."""
    return "yes" if value else "no"


def when(ts: Timestamp | datetime | None) -> str:
    """A time as Nomad prints one: RFC 3339 in the local zone, to the second
    (``2026-11-28T14:47:00Z``); empty when unset."""
    if ts is None:
        return ""
    if isinstance(ts, Timestamp):
        if not ts.seconds and not ts.nanos:
            return ""
        ts = ts.ToDatetime(tzinfo=UTC)
    text = ts.astimezone().replace(microsecond=0).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def short_id(value: str) -> str:
    """A full (UUID) id cut to :data:`SHORT_ID` characters unless ``--verbose``;
    any other value as given (job ids and node names are names, kept whole).
    Every command takes such a prefix back (:mod:`drover.cli.prefix`)."""
    if not verbose() and _UUID.fullmatch(value):
        return value[:SHORT_ID]
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return yes_no(value)
    return short_id(str(value))


# -- JSON ----------------------------------------------------------------------


def to_dict(msg: Message) -> dict[str, Any]:
    """A message as JSON with every field, defaults included (``converged: false``,
    ``version: 0``): a script reading ``--json`` must not guess what absence means.
    Enum values read as in the tables (``successful``, not
    ``DEPLOYMENT_STATUS_SUCCESSFUL``: :mod:`drover.jobspec.enums`)."""
    return lower_enums(msg.DESCRIPTOR, json_format.MessageToDict(
        msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True))


def plain(value: Any) -> Any:
    """``value`` with every message in it (nested too) as :func:`to_dict` has it."""
    if isinstance(value, Message):
        return to_dict(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def print_json(value: Any) -> None:
    """``value`` as indented JSON."""
    sys.stdout.write(json.dumps(plain(value), indent=2, sort_keys=True) + "\n")


def print_json_line(value: Any) -> None:
    """``value`` as one line of JSON (a watch's ``--json``: one object per change)."""
    sys.stdout.write(json.dumps(plain(value), sort_keys=True) + "\n")
    sys.stdout.flush()


# -- tables --------------------------------------------------------------------


def _is_id(column: str) -> bool:
    """Columns copied into the next command, never cut: ids and addresses."""
    return column in ("ID", "Address") or column.endswith(" ID")


def fit_widths(columns: Sequence[str], cells: Sequence[Sequence[str]],
               total: int, *, cut: bool = True) -> list[int]:
    """Each column's width so the table fits ``total`` terminal columns.

    A column is as wide as its widest cell or header. When the table is too
    wide, the widest text column (never an id or address column) gives up
    one character at a time, down to :data:`_MIN_CUT` (or its header); what
    then still does not fit is left to the terminal. The table (Nomad's: no
    rules, two spaces between columns) is :func:`table_width` wide.
    """
    widths = [max([len(col), *(len(r[i]) for r in cells if i < len(r))])
              for i, col in enumerate(columns)]
    floor = [w if _is_id(col) else min(w, max(_MIN_CUT, len(col)))
             for col, w in zip(columns, widths, strict=True)]
    excess = table_width(widths) - total
    while cut and excess > 0:
        cuttable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not cuttable:
            break
        widest = max(cuttable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def table_width(widths: Sequence[int]) -> int:
    """Terminal columns a table of these column widths takes: two spaces
    between columns, none at the edges."""
    return sum(widths) + 2 * max(0, len(widths) - 1)


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(0, room - 1)] + "…"


def table_lines(columns: Sequence[str], rows: Iterable[Sequence[Any]],
                total: int | None = None) -> list[str]:
    """A table's lines: the header, then one line per row, cut to fit
    ``total`` columns (the terminal's) unless ``--verbose``."""
    full = verbose()
    cells = [[_text(v) for v in row] for row in rows]
    widths = fit_widths(columns, cells, total or width(), cut=not full)
    return ["  ".join(_cut(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in [list(columns), *cells]]


def print_table(title: str | None, columns: Sequence[str],
                rows: Iterable[Sequence[Any]]) -> None:
    """A table for people (Nomad's shape): a section title when given (after
    a blank line), a header row, one line per row; full ids cut to 8
    characters (:func:`short_id`), long text cut with an ellipsis to fit the
    terminal, flags as yes/no."""
    lines = table_lines(columns, rows)
    if title:
        lines = ["", title, *lines]
    click.echo("\n".join(lines), file=console.file)


def print_list(opts: Wants, items: Sequence[Any], columns: Sequence[str],
               row: Callable[[Any], Sequence[Any]], *, namespace: str | None = None,
               empty: str = "") -> None:
    """A listing: JSON with --json, else a table of one ``row(item)`` per item
    (``empty`` instead when there is none and it is given).

    Given the listing's ``namespace``, a ``Namespace`` column is shown only
    when it spans several (``*`` or a glob), as Nomad's lists do."""
    if opts.json:
        print_json(list(items))
        return
    if not items and empty:
        click.echo(empty)
        return
    keep = list(range(len(columns)))
    if namespace is not None and "*" not in namespace and "Namespace" in columns:
        keep.remove(list(columns).index("Namespace"))
    print_table(None, [columns[i] for i in keep],
                ([r[i] for i in keep] for r in (list(row(it)) for it in items)))


def detail_lines(pairs: Sequence[tuple[str, Any]], total: int | None = None) -> list[str]:
    """Nomad's ``Key = Value`` block, keys padded to one width, each line
    cut to the terminal unless ``--verbose``."""
    pad = max((len(k) for k, _ in pairs), default=0)
    room = (total or width()) - pad - 3
    full = verbose()
    return [f"{k.ljust(pad)} = {_text(v) if full else _cut(_text(v), max(room, 8))}".rstrip()
            for k, v in pairs]


def print_detail(opts: Wants, value: Any, pairs: Sequence[tuple[str, Any]]) -> bool:
    """One object: ``value`` as JSON with --json (then True: the caller has
    nothing more to print), else its ``Key = Value`` block (False)."""
    if opts.json:
        print_json(value)
        return True
    click.echo("\n".join(detail_lines(pairs)))
    return False


def ago(ts: Timestamp, now: datetime | None = None) -> str:
    """How long ago, as Nomad's tables say it (``4m12s ago``); empty when unset."""
    if not ts.seconds and not ts.nanos:
        return ""
    secs = int(((now or datetime.now(UTC)) - ts.ToDatetime(tzinfo=UTC)).total_seconds())
    if secs < 0:
        return "now"
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h ago"
    if hours:
        return f"{hours}h{minutes}m ago"
    return f"{minutes}m{seconds}s ago" if minutes else f"{seconds}s ago"

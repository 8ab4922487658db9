"""What every client command shares: the address, stubs, output and errors.

A command calls :func:`run` with a coroutine; gRPC failures become one clear
line on stderr (message plus the ErrorInfo reason) and a non-zero exit code,
never a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.table import Table

from drover.cli.enums import lower_enums
from drover.cli.read_retry import ReadRetryChannel, reachable
from drover.cli.stale import query_options, with_query
from drover.config import TlsFiles
from drover.coord.tlsprobe import diagnose
from drover.rpc.failover import client_channel, split_addresses
from drover.rpc.remote import remote_status
from drover.telemetry import TelemetryConfigError, setup_tracing, tracer

#: The proxy of the local `make run` suite.
DEFAULT_ADDRESS = "127.0.0.1:7100"

T = TypeVar("T")

console = Console()
err_console = Console(stderr=True)


@dataclass(frozen=True)
class ClientOptions:
    address: str
    json: bool
    timeout: float
    #: The ACL secret id sent as ``authorization: Bearer`` (empty: anonymous).
    token: str = field(default="", repr=False)
    tls: TlsFiles = field(default_factory=TlsFiles)


_META = "drover.client"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    # Kept beside the command's own arguments, so every command gets them
    # through :func:`options` without each one declaring them.
    ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def token_tls_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--token/DROVER_TOKEN and --tls-ca/--tls-cert/--tls-key (DROVER_TLS_*),
    read back with :func:`token_and_tls` (or :func:`options`)."""
    for name, env, text in (
        ("--tls-key", "DROVER_TLS_KEY", "client key (mTLS)"),
        ("--tls-cert", "DROVER_TLS_CERT", "client certificate (mTLS)"),
        ("--tls-ca", "DROVER_TLS_CA", "CA that signed the server's certificate (enables TLS)"),
        ("--token", "DROVER_TOKEN", "ACL token secret id (default: anonymous)"),
    ):
        f = click.option(name, envvar=env, default="", show_default=False, help=text,
                         expose_value=False, callback=_remember)(f)
    return f


def verbose() -> bool:
    """Whether the current command was given ``--verbose`` (full ids, full text)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_META, {}).get("verbose"))


def token_and_tls() -> tuple[str, TlsFiles]:
    """The current command's --token and --tls-* (empty when not given)."""
    ctx = click.get_current_context(silent=True)
    extra: dict[str, Any] = ctx.meta.get(_META, {}) if ctx is not None else {}
    return extra.get("token") or "", TlsFiles(ca=extra.get("tls_ca") or "",
                                               cert=extra.get("tls_cert") or "",
                                               key=extra.get("tls_key") or "")


def client_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--address/DROVER_ADDR, --json, --timeout, --token/DROVER_TOKEN and
    --tls-ca/--tls-cert/--tls-key (DROVER_TLS_*) on a command."""
    f = token_tls_options(f)
    f = click.option("--verbose", "-v", is_flag=True, default=False, expose_value=False,
                     callback=_remember,
                     help="full ids and untruncated text in tables (as Nomad's -verbose)")(f)
    f = click.option("--timeout", default=30.0, show_default=True, type=float,
                     help="seconds per call")(f)
    f = click.option("--json", "as_json", is_flag=True, help="machine-readable JSON output")(f)
    f = click.option("--address", envvar="DROVER_ADDR", default=DEFAULT_ADDRESS,
                     show_default=True,
                     help="drover server (the proxy, or a service); several, comma-"
                     "separated, are tried in random order, reads fail over")(f)
    return f


@dataclass(frozen=True)
class ListOptions:
    """What every listing command takes: scope, filter, order and paging."""

    namespace: str
    filter: str
    order_by: str
    page_size: int
    prefix: str
    limit: int

    def request(self, page_token: str) -> dict[str, Any]:
        """The AIP-158 fields every List request shares, for one page."""
        return {"namespace": self.namespace, "filter": self.filter,
                "page_size": self.page_size, "page_token": page_token,
                "prefix": self.prefix, "order_by": self.order_by}


def list_options(filter_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--namespace/--filter/--order/--page-size/--prefix/--limit, passed as ``listing``."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, namespace: str, filter_: str, order: str, page_size: int,
                    prefix: str, limit: int, **kwargs: Any) -> Any:
            order_by = "create_index desc" if order == "desc" else "create_index"
            listing = ListOptions(namespace, filter_, order_by, page_size, prefix, limit)
            return f(*args, listing=listing, **kwargs)

        for option in reversed((
            click.option("--namespace", "-n", default="default", show_default=True,
                         help='"*" for every namespace (as Nomad: default unless asked)'),
            click.option("--filter", "filter_", default="", help=filter_help),
            click.option("--order", type=click.Choice(["asc", "desc"]), default="asc",
                         show_default=True, help="by create index"),
            click.option("--page-size", default=100, show_default=True,
                         type=click.IntRange(min=1)),
            click.option("--prefix", default="", help="id prefix"),
            click.option("--limit", default=0, type=click.IntRange(min=0),
                         help="stop after N (0: all)"),
        )):
            wrapper = option(wrapper)
        return wrapper

    return decorate


async def list_all(call: Callable[..., Awaitable[Any]], request: Callable[[str], Message],
                   items: str, *, per_call: float, limit: int = 0) -> list[Any]:
    """Every item of a paged List call, following ``next_page_token``.

    ``request(page_token)`` builds one page's request; ``items`` names the
    response's repeated field; with ``limit`` it stops after that many.
    """
    out: list[Any] = []
    token = ""
    while True:
        resp = await call(request(token), timeout=per_call)
        out.extend(getattr(resp, items))
        token = resp.next_page_token
        if not token or (limit and len(out) >= limit):
            return out[:limit] if limit else out


def run_list(opts: ClientOptions, listing: ListOptions,
             stub: Callable[[grpc.aio.Channel], Any], method: str,
             request: Callable[..., Message], items: str) -> list[Any]:
    """A listing command's List call, run to its end: every page (up to
    --limit) of ``stub(channel).method(request(**listing fields))``'s ``items``."""

    query = query_options()  # read here: the context is gone inside run's loop

    async def body(ch: grpc.aio.Channel) -> list[Any]:
        return await list_all(getattr(stub(ch), method),
                              lambda token: with_query(request(**listing.request(token)), query),
                              items,
                              per_call=opts.timeout, limit=listing.limit)

    return run(opts, body)


def options(address: str, as_json: bool, timeout: float) -> ClientOptions:
    token, tls = token_and_tls()
    return ClientOptions(address=address, json=as_json, timeout=timeout, token=token, tls=tls)


class CommandFailed(click.ClickException):
    """A failure already explained in one line."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        err_console.print(f"[red]Error:[/red] {self.message}", highlight=False)


#: What to do about an UNAVAILABLE, by its ErrorInfo reason: it says what
#: happened (the server answered), never "cannot reach".
_UNAVAILABLE_HINTS = {
    "NOT_LEADER": "a leader election is under way: try again in a few seconds",
    "NO_SERVER": "no server of that service is up yet (starting, or a leader election): "
                 "try again in a few seconds",
    "OUTCOME_UNKNOWN": "the write may have been applied: check before repeating it",
    "ETCD_UNAVAILABLE": "nothing was written: try again",
}


def describe(err: grpc.RpcError) -> str:
    """One line for a failed call, from the shared inbound decoding."""
    status = remote_status(err)
    line = f"{status.details} ({status.reason or status.code})"
    if status.leader:
        line += f"; leader: {status.leader}"
    elif status.code == "UNAVAILABLE" and status.reason in _UNAVAILABLE_HINTS:
        line += f"; {_UNAVAILABLE_HINTS[status.reason]}"
    return line


def _command_name() -> str:
    """``drover job run``, however the program was started (``python -m`` too)."""
    names: list[str] = []
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["drover", *reversed(names)])


def run(opts: ClientOptions, body: Callable[[grpc.aio.Channel], Awaitable[T]]) -> T:
    """Run one command's calls; with ``OTEL_*`` export configured, they are
    children of one span named after the command (its trace follows every hop)."""
    try:
        setup_tracing("cli")
    except TelemetryConfigError as e:
        raise CommandFailed(str(e)) from None

    addresses = split_addresses(opts.address) or [opts.address]

    async def main() -> T:
        with tracer("drover.cli").start_as_current_span(_command_name()):
            inner = client_channel(opts.address, tls=opts.tls, token=lambda: opts.token)
            async with ReadRetryChannel(inner, addresses) as ch:
                return await body(ch)

    try:
        for path, flag in ((opts.tls.ca, "--tls-ca"), (opts.tls.cert, "--tls-cert"),
                           (opts.tls.key, "--tls-key")):
            if path and not os.path.isfile(path):
                raise CommandFailed(f"{flag} {path}: no such file")
        return asyncio.run(main())
    except grpc.RpcError as err:
        status = remote_status(err)
        if status.code == "UNAVAILABLE" and not status.answered:
            mismatch = diagnose(addresses[0], opts.tls, what="drover")
            if mismatch:
                raise CommandFailed(mismatch) from None
            if not reachable(addresses):
                raise CommandFailed(
                    f"cannot reach drover at {opts.address} ({err.details()}); "
                    "is it running (`make run`)? set --address or DROVER_ADDR"
                ) from None
            # It listens, yet the status carries no server's metadata: the
            # proxy relayed a server behind it that broke (a leader killed,
            # an election under way).
            raise CommandFailed(
                f"drover at {opts.address} answered, but a server behind it is unavailable: "
                f"{err.details()} (UNAVAILABLE); a leader election may be under way: "
                "try again in a few seconds") from None
        raise CommandFailed(describe(err)) from None


def to_dict(msg: Message) -> dict[str, Any]:
    """A message as JSON with every field, defaults included (``converged: false``,
    ``version: 0``): a script reading ``--json`` must not guess what absence means.
    Enum values read as in the tables (``successful``, not
    ``DEPLOYMENT_STATUS_SUCCESSFUL``: :mod:`drover.cli.enums`)."""
    return lower_enums(msg.DESCRIPTOR, json_format.MessageToDict(
        msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True))


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return to_dict(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def print_json(value: Any) -> None:
    """``value`` as JSON, messages in it (nested too) as :func:`to_dict` has them."""
    sys.stdout.write(json.dumps(_plain(value), indent=2, sort_keys=True) + "\n")


def _is_id(column: str) -> bool:
    """Columns copied into the next command, never cut: ids and addresses."""
    return column in ("ID", "Address") or column.endswith(" ID")


#: Characters of an id in tables, as Nomad's ``shortId``; ``--verbose``
#: shows all 36 (``fullId``).
SHORT_ID = 8
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: A text column is cut no narrower than this (or its header).
_MIN_CUT = 8


def short_id(value: str) -> str:
    """A full (UUID) id cut to :data:`SHORT_ID` characters unless ``--verbose``;
    any other value as given (job ids and node names are names, kept whole).
    Every command takes such a prefix back (:mod:`drover.cli.prefix`)."""
    if not verbose() and _UUID.fullmatch(value):
        return value[:SHORT_ID]
    return value


def fit_widths(columns: Sequence[str], cells: Sequence[Sequence[str]],
               width: int, *, cut: bool = True) -> list[int]:
    """Each column's width so the table fits ``width`` terminal columns.

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
    excess = table_width(widths) - width
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


def new_table(title: str | None = None) -> Table:
    """An empty table in the CLI's one style: Nomad's (a bold header, columns
    two spaces apart, no rules), so 80 columns hold as much as they can."""
    return Table(title=title, box=None, pad_edge=False, header_style="bold",
                 title_justify="left")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table for people that fits the terminal (80 columns when not one).

    Full ids are cut to 8 characters (:func:`short_id`), whatever column
    they are in, and never further; long text is cut with an ellipsis
    (:func:`fit_widths`). With ``--verbose`` every cell is whole, however
    wide the table gets; ``--json`` has every field whole too."""
    full = verbose()
    cells = [[short_id("" if v is None else str(v)) for v in row] for row in rows]
    table = new_table(title)
    # --verbose: every cell whole, the table as wide as that takes (lines
    # longer than the terminal, as Nomad's -verbose prints them).
    widths = fit_widths(columns, cells, 0 if full else console.width, cut=not full)
    for col, w in zip(columns, widths, strict=True):
        table.add_column(_cut(col, w), width=w, no_wrap=True)
    cells = [[_cut(c, widths[i]) for i, c in enumerate(row)] for row in cells]
    for row in cells:
        table.add_row(*row)
    total = table_width(widths)
    if total <= console.width:
        console.print(table)
    else:  # --verbose only: rich would squeeze the table into the terminal
        wide = Console(file=console.file, width=total, force_terminal=console.is_terminal,
                       no_color=console.no_color)
        wide.print(table, crop=False)


def print_list(opts: ClientOptions, items: Sequence[Any], columns: Sequence[str],
               row: Callable[[Any], Sequence[Any]], *, namespace: str | None = None) -> None:
    """A listing: JSON with --json, else a table of one ``row(item)`` per item.

    Given the listing's ``namespace``, a ``Namespace`` column is shown only
    when it spans several (``*`` or a glob), as Nomad's lists do."""
    if opts.json:
        print_json(list(items))
        return
    keep = list(range(len(columns)))
    if namespace is not None and "*" not in namespace and "Namespace" in columns:
        keep.remove(list(columns).index("Namespace"))
    print_table(None, [columns[i] for i in keep],
                ([r[i] for i in keep] for r in (list(row(it)) for it in items)))


def enum_name(value: int, enum: Any, prefix: str) -> str:
    """EVALUATION_STATUS_PENDING -> pending (as ``--json`` prints it too)."""
    name: str = enum.Name(value)
    return name.removeprefix(prefix).lower()

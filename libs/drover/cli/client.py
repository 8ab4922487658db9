"""What every client command shares: the address, stubs, output and errors.

A command calls :func:`run` with a coroutine; gRPC failures become one clear
line on stderr (message plus the ErrorInfo reason) and a non-zero exit code,
never a traceback.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
import grpc
from google.protobuf.message import Message

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.cli.output import CLIENT_META, err_console
from drover.cli.read_retry import ReadRetryChannel, reachable
from drover.cli.stale import query_options, stale_options, with_query
from drover.config import TlsFiles
from drover.coord.tlsprobe import diagnose
from drover.rpc.failover import client_channel, split_addresses
from drover.rpc.remote import remote_status
from drover.telemetry import TelemetryConfigError, setup_tracing, tracer

#: The proxy of the local `make run` suite.
DEFAULT_ADDRESS = "127.0.0.1:7100"

T = TypeVar("T")


@dataclass(frozen=True)
class ClientOptions:
    address: str
    json: bool
    timeout: float
    #: The ACL secret id sent as ``authorization: Bearer`` (empty: anonymous).
    token: str = field(default="", repr=False)
    tls: TlsFiles = field(default_factory=TlsFiles)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    # Kept beside the command's own arguments, so every command gets them
    # through :func:`options` without each one declaring them.
    ctx.meta.setdefault(CLIENT_META, {})[param.name] = value
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


def token_and_tls() -> tuple[str, TlsFiles]:
    """The current command's --token and --tls-* (empty when not given)."""
    ctx = click.get_current_context(silent=True)
    extra: dict[str, Any] = ctx.meta.get(CLIENT_META, {}) if ctx is not None else {}
    return extra.get("token") or "", TlsFiles(ca=extra.get("tls_ca") or "",
                                               cert=extra.get("tls_cert") or "",
                                               key=extra.get("tls_key") or "")


def client_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--address/DROVER_ADDR, --json, --timeout, --verbose, --token/DROVER_TOKEN
    and --tls-ca/--tls-cert/--tls-key (DROVER_TLS_*) on a command, which
    gets them as one ``opts: ClientOptions``."""

    @functools.wraps(command)
    def with_opts(*args: Any, address: str, as_json: bool, timeout: float,
                  **kwargs: Any) -> Any:
        return command(*args, opts=options(address, as_json, timeout), **kwargs)

    f = token_tls_options(with_opts)
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

    def narrowed(self, clause: str) -> ListOptions:
        """The same listing, its filter ANDed with ``clause`` (CEL)."""
        both = f"({self.filter}) && {clause}" if self.filter else clause
        return dataclasses.replace(self, filter=both)

    def request(self, page_token: str) -> dict[str, Any]:
        """The AIP-158 fields every List request shares, for one page."""
        return {"namespace": self.namespace, "filter": self.filter,
                "page_size": self.page_size, "page_token": page_token,
                "prefix": self.prefix, "order_by": self.order_by}


def list_options(filter_help: str, *, newest_first: bool = False,
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--namespace/--filter/--order/--page-size/--prefix/--limit, passed as
    ``listing``; ``newest_first`` for lists Nomad shows newest first."""

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
            click.option("--order", type=click.Choice(["asc", "desc"]),
                         default="desc" if newest_first else "asc",
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
        err_console.print(f"[red]Error:[/red] {self.message}", highlight=False, soft_wrap=True)


#: What to do about an UNAVAILABLE, by its ErrorInfo reason: it says what
#: happened (the server answered), never "cannot reach".
_UNAVAILABLE_HINTS = {
    "NOT_LEADER": "a leader election is under way: try again in a few seconds",
    "OUTCOME_UNKNOWN": "the write may have been applied: check before repeating it",
    "ETCD_UNAVAILABLE": "nothing was written: try again",
}
#: The services that elect a leader; the state service and the proxy do not.
ELECTED = ("broker", "deployments")
_MEMBERS = "`drover operator members` lists the servers the proxy knows"


def _no_server_hint(service: str) -> str:
    if service in ELECTED:
        return (f"no {service} server is up yet (starting, or a leader election under way): "
                "try again in a few seconds")
    return f"no {service or 'such'} server is up: is it running? {_MEMBERS}"


def describe(err: grpc.RpcError) -> str:
    """One line for a failed call, from the shared inbound decoding."""
    status = remote_status(err)
    line = f"{status.details} ({status.reason or status.code})"
    if status.leader:
        line += f"; leader: {status.leader}"
    elif status.code == "UNAVAILABLE" and status.reason == "NO_SERVER":
        line += f"; {_no_server_hint(status.metadata.get('service', ''))}"
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
    except KeyboardInterrupt:  # Ctrl-C stops a watch or a monitor, never the work
        raise SystemExit(130) from None
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
            # proxy relayed a server behind it that broke (a state replica
            # stopped, a leader killed).
            raise CommandFailed(
                f"drover at {opts.address} answered, but a server behind it is unavailable: "
                f"{err.details()} (UNAVAILABLE); try again in a few seconds, and if it "
                f"persists check that every service runs ({_MEMBERS})") from None
        raise CommandFailed(describe(err)) from None




def namespace_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """--namespace/-n (default ``default``), on every command about one object."""
    return click.option("--namespace", "-n", default="default", show_default=True,
                        help="the object's namespace")(f)


def state(ch: grpc.aio.Channel) -> Any:
    """The state service's stub on ``ch`` (the proxy serves it too)."""
    return state_pb2_grpc.StateServiceStub(ch)


async def list_allocations(ch: grpc.aio.Channel, filter_: str, per_call: float,
                           namespace: str = "*") -> list[Any]:
    """Every allocation matching ``filter_`` (CEL), every page."""
    return await list_all(
        state(ch).ListAllocations, lambda t: state_pb2.ListAllocationsRequest(
            namespace=namespace, filter=filter_, page_size=1000, page_token=t),
        "allocations", per_call=per_call)


def unary(opts: ClientOptions, stub: Callable[[grpc.aio.Channel], Any], method: str,
          request: Message) -> Any:
    """One call, ``stub(channel).method(request)``, run as the command's calls."""

    async def body(ch: grpc.aio.Channel) -> Any:
        return await getattr(stub(ch), method)(request, timeout=opts.timeout)

    return run(opts, body)


def about(group: click.Group, name: str, argument: str, *,
          namespaced: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """A command about one object: ``group name ARGUMENT`` with --namespace
    (unless the object has none) and the client options; the options below
    this decorator are the command's own."""

    def decorate(f: Callable[..., Any]) -> Any:
        own = {id(p) for p in getattr(f, "__click_params__", ())}
        f = client_options(f)
        if namespaced:
            f = namespace_option(f)
        command = group.command(name=name)(click.argument(argument)(f))
        # --help: the argument, the command's own options, then the shared ones.
        command.params.sort(key=lambda p: (not isinstance(p, click.Argument), id(p) not in own))
        return command

    return decorate


def lister(group: click.Group, name: str, filter_help: str, *, newest_first: bool = False,
           stale: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """A listing command: ``group name`` with the listing options (passed as
    ``listing``; ``filter_help`` says what --filter reads), --stale (unless
    the list has no replicas to read from) and the client options."""

    def decorate(f: Callable[..., Any]) -> Any:
        f = client_options(f)
        if stale:
            f = stale_options(f)
        return group.command(name=name)(list_options(filter_help, newest_first=newest_first)(f))

    return decorate

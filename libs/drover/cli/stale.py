"""--stale and --max-stale on the commands that read state: which replica may answer.

By default a read is consistent: the replica that answers first catches up
to etcd. ``--stale`` lets any replica answer at once from its cache (Nomad's
``-stale``, QueryOptions ``stale``); ``--max-stale DURATION`` bounds how old
that cache may be (Consul's ``-max-stale``, QueryOptions ``max_stale``; it
implies ``--stale``): a replica out of touch with etcd for longer refuses
UNAVAILABLE ``STALE_READ_BOUND``, and the read is retried on another
(:mod:`drover.cli.read_retry`, the proxy's retry policy). The options are
kept beside the command's own arguments (``ctx.meta``), so a command adds
them with :func:`stale_options` and :func:`with_query` fills every request
that has a ``query`` field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar, cast

import click
from google.protobuf.message import Message

from drover.api.types.v1 import query_pb2

__all__ = ["parse_duration", "query_options", "stale_options", "with_query"]

_META = "drover.stale"
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
M = TypeVar("M", bound=Message)


def parse_duration(text: str) -> float:
    """Seconds of ``500ms``, ``2s``, ``1m``, ``1.5`` (bare: seconds)."""
    raw = text.strip()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if raw.endswith(unit):
            number, scale = raw[: -len(unit)], _UNITS[unit]
            break
    else:
        number, scale = raw, 1.0
    try:
        seconds = float(number) * scale
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a duration (e.g. 500ms, 2s, 1m)") from None
    if seconds < 0:
        raise click.BadParameter("a duration must not be negative")
    return seconds


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.name == "max_stale" and value is not None:
        value = parse_duration(value)
    ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def stale_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--stale and --max-stale on a reading command (see the module docstring)."""
    f = click.option("--max-stale", default=None, expose_value=False, callback=_remember,
                     metavar="DURATION",
                     help="with --stale implied: refuse (and retry elsewhere) an answer from "
                     "a replica that has not heard from etcd for longer, e.g. 2s")(f)
    return click.option("--stale", is_flag=True, default=False, expose_value=False,
                        callback=_remember,
                        help="let any replica answer at once from its cache")(f)


def query_options() -> query_pb2.QueryOptions | None:
    """The current command's QueryOptions, or None when it asked for neither."""
    ctx = click.get_current_context(silent=True)
    given: dict[str, Any] = ctx.meta.get(_META, {}) if ctx is not None else {}
    stale, max_stale = bool(given.get("stale")), given.get("max_stale") or 0.0
    if not stale and not max_stale:
        return None
    query = query_pb2.QueryOptions(stale=True)
    if max_stale:
        query.max_stale.FromTimedelta(timedelta(seconds=max_stale))
    return query


def with_query(request: M, query: query_pb2.QueryOptions | None = None) -> M:
    """``request`` with the command's QueryOptions, if it asked and the
    request has a ``query`` field (changed in place, and returned)."""
    query = query if query is not None else query_options()
    if query is not None and "query" in request.DESCRIPTOR.fields_by_name:
        cast(Any, request).query.CopyFrom(query)
    return request

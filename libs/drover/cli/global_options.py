"""Client options given before the subcommand: ``drover --address X job list``.

Every client command takes ``--address``, ``--json``, ``--timeout``,
``--token`` and ``--tls-*`` itself; the group takes them too and hands them
down as defaults (click's ``default_map``) to every command that has them, so
both ``drover --json eval list`` and ``drover eval list --json`` work. After
the subcommand still wins (it is the command's own flag); a global flag wins
over the environment (``DROVER_ADDR``, ``DROVER_TOKEN``, ...), as a flag does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import click

#: (flag, parameter name, environment twin or "", help)
GLOBAL: tuple[tuple[str, str, str, str], ...] = (
    ("--address", "address", "DROVER_ADDR", "drover server for every client command"),
    ("--timeout", "timeout", "", "seconds per call"),
    ("--token", "token", "DROVER_TOKEN", "ACL token secret id"),
    ("--tls-ca", "tls_ca", "DROVER_TLS_CA", "CA of the server's certificate (enables TLS)"),
    ("--tls-cert", "tls_cert", "DROVER_TLS_CERT", "client certificate (mTLS)"),
    ("--tls-key", "tls_key", "DROVER_TLS_KEY", "client key (mTLS)"),
)


def global_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The group's copies of the client options (no env twins: the commands read those)."""
    for flag, name, _env, text in reversed(GLOBAL):
        kind = float if name == "timeout" else str
        # Only from the command line: the environment reaches each command
        # through its own option (auto_envvar_prefix would read DROVER_TOKEN
        # here too, and apply() would then take it away from the command).
        f = click.option(flag, name, default=None, type=kind, help=text,
                         allow_from_autoenv=False)(f)
    return click.option("--json", "as_json", is_flag=True, default=False,
                        allow_from_autoenv=False,
                        help="machine-readable JSON output for every client command")(f)


def defaults_for(command: click.Command, values: Mapping[str, Any]) -> dict[str, Any]:
    """A ``default_map`` giving ``values`` to every subcommand that has those params."""
    out: dict[str, Any] = {}
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            nested = defaults_for(sub, values)
            if nested:
                out[name] = nested
        return out
    names = {p.name for p in command.params}
    return {k: v for k, v in values.items() if k in names}


def apply(ctx: click.Context, given: Mapping[str, Any]) -> None:
    """Hand the options given before the subcommand down to it."""
    values = {k: v for k, v in given.items() if v not in (None, False, "")}
    if not values:
        return
    envs = {name: env for _f, name, env, _h in GLOBAL if env}
    for name in values:
        if name in envs:
            # click reads a command's env twin before its default_map: a flag
            # given here must beat the environment, as a flag does.
            os.environ.pop(envs[name], None)
    assert isinstance(ctx.command, click.Group)
    ctx.default_map = {**(ctx.default_map or {}), **defaults_for(ctx.command, values)}
